"""Intermediate capture names the first kernel quantity that diverges from the reference's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kernel_medic.tools.diagnosis.capture import CaptureUnsupported, capture, instrument
from kernel_medic.tools.evaluation.problem import load_problem
from problems import write_problem

ROWWISE_WRAPPER = """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        out = torch.empty({out_shape}, dtype=x.dtype, device=x.device)
        kernel[(rows,)](x, out, x.stride(0), n, BLOCK=64)
        return out
"""

HEADER = """import torch
import torch.nn as nn
import triton
import triton.language as tl


"""


def reference(body: str, rows: int = 4, n: int = 50) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        f"        super().__init__()\n\n    def forward(self, x):\n        return {body}\n\n\n"
        f"rows = {rows}\nn = {n}\n\n\ndef get_inputs():\n    return [torch.randn(rows, n)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )


SOFTMAX_OTHER_ZERO = (
    HEADER
    + """@triton.jit
def kernel(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    row_max = tl.max(x, axis=0)
    num = tl.exp(x - row_max)
    row_sum = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n + cols, num / row_sum, mask=mask)
"""
    + ROWWISE_WRAPPER.format(out_shape="rows, n")
)


def layernorm(mean_divisor: str, var_divisor: str) -> str:
    return (
        HEADER
        + f"""@triton.jit
def kernel(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / {mean_divisor}
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / {var_divisor}
    rstd = 1.0 / tl.sqrt(var + 1e-5)
    tl.store(out_ptr + row * n + cols, xc * rstd, mask=mask)
"""
        + ROWWISE_WRAPPER.format(out_shape="rows, n")
    )


LOGSUMEXP_NO_MAX = (
    HEADER
    + """@triton.jit
def kernel(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    row_sum = tl.sum(tl.exp(x), axis=0)
    tl.store(out_ptr + row, tl.log(row_sum))
"""
    + ROWWISE_WRAPPER.format(out_shape="rows")
)

MATMUL_REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 32
N = 32
K = 40


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
"""


def matmul(k_bound: str) -> str:
    return (
        HEADER
        + f"""@triton.jit
def kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, {k_bound}):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        M, K = a.shape
        _, N = b.shape
        c = torch.empty((M, N), dtype=torch.float32, device=a.device)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        return c
"""
    )


def run_capture(evaluator: Any, tmp_path: Path, candidate: str, ref: str, variant: str | None = None) -> dict:
    folder = write_problem(tmp_path / "p", candidate, reference=ref)
    return capture(load_problem(folder), evaluator.pool, value_variant=variant)


def by_name(result: dict) -> dict[str, bool]:
    return {q["name"]: q["matches"] for q in result["quantities"]}


def test_softmax_with_other_zero_diverges_at_the_row_sum_not_the_row_max(
    evaluator: Any, tmp_path: Path
) -> None:
    result = run_capture(evaluator, tmp_path, SOFTMAX_OTHER_ZERO, reference("torch.softmax(x, dim=-1)"))
    assert by_name(result) == {"row_max": True, "row_sum": False}
    assert result["first_divergence"] == "row_sum"
    assert [q["line"] for q in result["quantities"]] == [13, 15]


def test_layernorm_dividing_by_block_diverges_first_at_the_mean(evaluator: Any, tmp_path: Path) -> None:
    ref = reference("torch.nn.functional.layer_norm(x, (x.shape[-1],))")
    result = run_capture(evaluator, tmp_path, layernorm("BLOCK", "n"), ref)
    assert result["first_divergence"] == "mean"
    assert by_name(result)["mean"] is False


def test_layernorm_with_unbiased_variance_diverges_at_the_variance(evaluator: Any, tmp_path: Path) -> None:
    ref = reference("torch.nn.functional.layer_norm(x, (x.shape[-1],))")
    result = run_capture(evaluator, tmp_path, layernorm("n", "(n - 1)"), ref)
    assert by_name(result) == {"mean": True, "var": False}
    assert result["first_divergence"] == "var"


def test_matmul_k_loop_dropping_the_tail_diverges_at_the_accumulator(evaluator: Any, tmp_path: Path) -> None:
    bad = run_capture(evaluator, tmp_path / "bad", matmul("K // BLOCK_K"), MATMUL_REFERENCE)
    good = run_capture(evaluator, tmp_path / "good", matmul("tl.cdiv(K, BLOCK_K)"), MATMUL_REFERENCE)
    assert bad["first_divergence"] == "acc" and by_name(bad) == {"acc": False}
    assert good["first_divergence"] is None and by_name(good) == {"acc": True}


def test_logsumexp_without_max_subtraction_overflows_in_the_row_sum(evaluator: Any, tmp_path: Path) -> None:
    ref = reference("torch.logsumexp(x, dim=-1)")
    large = run_capture(evaluator, tmp_path / "large", LOGSUMEXP_NO_MAX, ref, variant="x100")
    assert large["first_divergence"] == "row_sum"
    assert large["quantities"][0]["max_abs_err"] is None  # inf where the reference is finite
    small = run_capture(evaluator, tmp_path / "small", LOGSUMEXP_NO_MAX, ref)
    assert small["first_divergence"] is None


def test_instrumented_copy_adds_one_pointer_per_quantity_and_keeps_lines() -> None:
    inst = instrument(SOFTMAX_OTHER_ZERO)
    assert [q.name for q in inst.quantities] == ["row_max", "row_sum"]
    assert "kmedic_dbg_0" in inst.source and "kmedic_dbg_1=" in inst.source
    with pytest.raises(CaptureUnsupported, match="reduction"):
        instrument(HEADER + "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n")
