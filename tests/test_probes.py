"""Each probe separates the hypotheses it is meant to, on real kernels through the real sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_medic.tools.diagnosis.probes import run_probes
from kernel_medic.tools.evaluation.problem import load_problem
from problems import node_state, write_problem

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"


def reference(body: str, rows: int, n: int) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        f"        super().__init__()\n\n    def forward(self, x):\n        return {body}\n\n\n"
        f"rows = {rows}\nn = {n}\n\n\ndef get_inputs():\n    return [torch.randn(rows, n)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )


SCALE_REF = reference("x * 2.0", 30, 30)

SWAPPED_STRIDES = (
    HEADER
    + """@triton.jit
def kernel(x_ptr, out_ptr, stride_row, stride_col, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=mask)
    tl.store(out_ptr + row * n + cols, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        rows, n = x.shape
        out = torch.empty((rows, n), dtype=x.dtype, device=x.device)
        kernel[(rows,)](x, out, x.stride(1), x.stride(0), n, BLOCK=32)
        return out
"""
)

FLOOR_GRID = (
    HEADER
    + """@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        kernel[(n // 128,)](x, out, n, BLOCK=128)
        return out
"""
)


def row_kernel(body: str, out: str = "rows") -> str:
    return (
        HEADER
        + f"""@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
{body}


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        out = torch.empty(({out}), dtype=x.dtype, device=x.device)
        kernel[(rows,)](x, out, n, BLOCK=64)
        return out
"""
    )


MEAN_BY_BLOCK = row_kernel(
    "    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)\n"
    "    tl.store(out_ptr + row, tl.sum(x, axis=0) / BLOCK)"
)
MEAN_OF_SQUARES = row_kernel(
    "    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)\n"
    "    tl.store(out_ptr + row, tl.sum(x * x, axis=0) / n)"
)
SOFTMAX_BODY = (
    "    x = tl.load(x_ptr + row * n + cols, mask=mask, other=-float('inf'))\n"
    "    num = tl.exp({shifted})\n"
    "    tl.store(out_ptr + row * n + cols, num / tl.sum(num, axis=0), mask=mask)"
)


def probe(evaluator: Any, tmp_path: Path, candidate: str, ref: str, *names: str) -> dict[str, dict]:
    folder = write_problem(tmp_path, candidate, reference=ref)
    findings = run_probes(load_problem(folder), evaluator.pool, probes=names)
    return {f["probe"]: f for f in findings}


def test_arange_tells_a_transposed_stride_bug_from_a_tail_bug(evaluator: Any, tmp_path: Path) -> None:
    strides = probe(evaluator, tmp_path / "s", SWAPPED_STRIDES, SCALE_REF, "arange")["arange_contiguous"]
    tail = probe(evaluator, tmp_path / "t", FLOOR_GRID, SCALE_REF, "arange")["arange_contiguous"]
    assert "transposed" in strides["result"]["relationships"]
    assert "strides_layout" in strides["supports"] and "tail_mask" in strides["refutes"]
    assert "grid_coverage" in tail["supports"] and "strides_layout" in tail["refutes"]
    assert "strides_layout" not in tail["supports"]


def test_ones_tells_divide_by_block_from_divide_by_n(evaluator: Any, tmp_path: Path) -> None:
    ref = reference("x.mean(dim=-1)", 4, 50)
    by_block = probe(evaluator, tmp_path / "b", MEAN_BY_BLOCK, ref, "ones")["ones"]
    by_n = probe(evaluator, tmp_path / "n", MEAN_OF_SQUARES, ref, "ones")["ones"]
    assert "normalisation" in by_block["supports"]
    assert by_block["result"]["ratio"] == 50 / 64  # a count error: every output off by n / BLOCK
    assert by_n["result"]["verdict"] == "pass" and "normalisation" in by_n["refutes"]


def test_large_magnitudes_reveal_missing_max_subtraction(evaluator: Any, tmp_path: Path) -> None:
    ref = reference("torch.softmax(x, dim=-1)", 4, 50)
    no_max = row_kernel(SOFTMAX_BODY.format(shifted="x"), out="rows, n")
    with_max = row_kernel(SOFTMAX_BODY.format(shifted="x - tl.max(x, axis=0)"), out="rows, n")
    bad = probe(evaluator, tmp_path / "bad", no_max, ref, "large")["large"]
    good = probe(evaluator, tmp_path / "good", with_max, ref, "large")["large"]
    assert bad["result"]["nan_where_ref_finite"] > 0 and "numerical_stability" in bad["supports"]
    assert good["result"]["verdict"] == "pass" and "numerical_stability" in good["refutes"]


def test_block_multiple_and_ragged_shapes_reveal_a_tail_bug(evaluator: Any, tmp_path: Path) -> None:
    tail = probe(evaluator, tmp_path / "t", FLOOR_GRID, SCALE_REF, "shapes")["shapes"]
    strides = probe(evaluator, tmp_path / "s", SWAPPED_STRIDES, SCALE_REF, "shapes")["shapes"]
    assert (tail["result"]["aligned"], tail["result"]["ragged"]) == ("pass", "mismatch")
    assert "grid_coverage" in tail["supports"] and "strides_layout" in tail["refutes"]
    assert strides["result"]["aligned"] != "pass" and "tail_mask" in strides["refutes"]


def test_noncontiguous_arange_blames_the_layout(evaluator: Any, tmp_path: Path) -> None:
    # Contiguous inputs pass; a transposed layout breaks a kernel that assumes unit column stride.
    kernel = SWAPPED_STRIDES.replace("x.stride(1), x.stride(0)", "x.stride(0), 1")
    found = probe(evaluator, tmp_path, kernel, SCALE_REF, "arange")
    assert found["arange_contiguous"]["result"]["verdict"] == "pass"
    assert found["arange_noncontiguous"]["supports"] == ["strides_layout"]


ROW_MEAN_LOOP = (
    HEADER
    + """@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = ACC_INIT
    for start in range(0, n, BLOCK):
        x = tl.load(x_ptr + row * n + start + cols, mask=start + cols < n, other=0.0)
        acc += x
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        out = torch.empty((rows,), dtype=x.dtype, device=x.device)
        kernel[(rows,)](x, out, n, BLOCK=16)
        return out
"""
)


def test_fp16_inputs_reveal_an_accumulator_in_the_input_precision(evaluator: Any, tmp_path: Path) -> None:
    # Means of values around 50 over 2048 columns: right in fp32, but an accumulator that follows the input
    # dtype overflows fp16 (65504) on the way, while PyTorch's own fp16 mean accumulates in fp32.
    ref = reference("x.mean(dim=-1)", 4, 2048).replace("torch.randn(rows, n)", "torch.randn(rows, n) + 50")
    half_acc = ROW_MEAN_LOOP.replace("ACC_INIT", "tl.zeros((BLOCK,), dtype=x_ptr.dtype.element_ty)")
    fp32_acc = ROW_MEAN_LOOP.replace("ACC_INIT", "tl.zeros((BLOCK,), dtype=tl.float32)")
    bad = probe(evaluator, tmp_path / "bad", half_acc, ref, "precision")["precision"]
    good = probe(evaluator, tmp_path / "good", fp32_acc, ref, "precision")["precision"]
    assert bad["result"]["fp32_passes"] and "accumulation_precision" in bad["supports"]
    assert "accumulation_precision" in good["refutes"]


def test_instrument_node_adds_probe_and_capture_findings(tmp_path: Path) -> None:
    from kernel_medic.nodes.instrument import instrument

    folder = write_problem(
        tmp_path, SOFTMAX_CANDIDATE, reference=reference("torch.softmax(x, dim=-1)", 4, 50)
    )
    state = node_state(
        folder,
        SOFTMAX_CANDIDATE,
        best_report={"cases": [{"name": "seed0", "verdict": "mismatch", "pattern": "rows"}]},
    )
    findings = instrument(state)["instrumentation"]
    kinds = [f["kind"] for f in findings]
    assert kinds[0] == "variant_localisation" and "probe" in kinds
    assert findings[-1] == {**findings[-1], "kind": "capture", "first_divergence": "row_sum"}
    broken = instrument({**state, "reference_path": str(tmp_path / "missing.py")})["instrumentation"]
    assert broken[0]["kind"] == "variant_localisation" and "skipped" in broken[1]


SOFTMAX_CANDIDATE = row_kernel(
    "    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)\n"
    "    row_max = tl.max(x, axis=0)\n"
    "    num = tl.exp(x - row_max)\n"
    "    row_sum = tl.sum(num, axis=0)\n"
    "    tl.store(out_ptr + row * n + cols, num / row_sum, mask=mask)",
    out="rows, n",
)
