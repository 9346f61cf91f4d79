"""The general edit space (typed single-site edits at ranked statements) and the micro screening tier."""

from __future__ import annotations

import ast
from pathlib import Path

from kernel_medic.tools.evaluation.cases import cases_for_tier, micro_shape_overrides
from kernel_medic.tools.evaluation.crashes import explain_output
from kernel_medic.tools.evaluation.mismatch import closer
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.evaluation.settings import ProblemConfig
from kernel_medic.tools.repair.edit_space import EDITS, generate
from kernel_medic.tools.repair.mutations import MUTATIONS
from kernel_medic.tools.repair.patchers import OfflinePatcher
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.search import candidates, light_score
from kernel_medic.tools.repair.spec_checks import spec_gaps, spec_hypotheses
from problems import (
    ADDCMUL_CANDIDATE,
    ADDCMUL_REFERENCE,
    CONV2D_CANDIDATE,
    CONV2D_REFERENCE,
    CONVT_CANDIDATE,
    CONVT_INLINE_CANDIDATE,
    LIGHT_TOML,
    LINEAR_RELU_CANDIDATE,
    LINEAR_RELU_REFERENCE,
    OPAQUE_SCALE_REFERENCE,
    PAD_CANDIDATE,
    PAD_REFERENCE,
    PNORM_CANDIDATE,
    PNORM_REFERENCE,
    convt_context,
    scale_candidate,
    write_problem,
)
from test_search import request_for

SOFTMAX_DIM0_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 0):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, dim=self.dim)


rows = 37
cols = 24


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [0]
"""

# Softmax over dim 0: the input is permuted so the dimension is last and reshaped to 2-D, but the reshape of
# a permuted view is still a strided view, and the row kernel assumes unit column stride.
SOFTMAX_DIM0_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_softmax(in_ptr, out_ptr, stride_in, stride_out, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    vals = tl.load(in_ptr + row * stride_in + cols, mask=mask, other=-float("inf"))
    peak = tl.max(vals, axis=0)
    num = tl.exp(vals - peak)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride_out + cols, num / den, mask=mask)


def softmax_dim(x, dim):
    moved = x.permute(1, 0) if dim == 0 else x
    rows, cols = moved.shape
    flat = moved.reshape(rows, cols)
    out = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
    block = triton.next_power_of_2(cols)
    row_softmax[(rows,)](flat, out, flat.stride(0), out.stride(0), cols, BLOCK=block)
    return out.permute(1, 0) if dim == 0 else out


class ModelNew(nn.Module):
    def __init__(self, dim: int = 0):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return softmax_dim(x, self.dim)
"""


def _rules(source: str, context: RuleContext | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rw in generate(source, context):
        out.setdefault(rw.rule, []).append(rw.description)
        ast.parse(rw.source)  # every edit is valid Python
    return out


def test_the_edit_space_offers_contiguous_on_the_view_handed_to_the_kernel() -> None:
    found = _rules(SOFTMAX_DIM0_CANDIDATE)
    assert any("flat = ... .contiguous()" in d for d in found["edit_contiguous"])
    assert any("flat.contiguous() before the launch" in d for d in found["edit_contiguous"])
    # Scalars are never made contiguous.
    assert not any("cols.contiguous" in d or "block.contiguous" in d for d in found["edit_contiguous"])


def test_launch_options_and_compile_time_arguments_are_never_made_contiguous() -> None:
    # Block size and warps unpacked from a settings tuple: nothing in their assignment says they are numbers,
    # but the kernel takes one as a `tl.constexpr` (here by position) and the other is a launch option.
    source = SOFTMAX_DIM0_CANDIDATE.replace(
        "    block = triton.next_power_of_2(cols)\n", "    block, warps = settings(cols)\n"
    ).replace("cols, BLOCK=block)", "cols, block, num_warps=warps)")
    source = source.replace(
        "def softmax_dim(", "def settings(n):\n    return triton.next_power_of_2(n), 4\n\n\ndef softmax_dim("
    )
    found = _rules(source)
    assert any("flat.contiguous() before the launch" in d for d in found["edit_contiguous"])
    assert not any("warps.contiguous" in d or "block.contiguous" in d for d in found["edit_contiguous"])


def test_typed_edits_of_each_kind() -> None:
    source = scale_candidate(("x * 2.0", "x.to(tl.float16) * 2.0"), ("pid * BLOCK", "pid // BLOCK"))
    context = RuleContext.from_reference("class Model:\n    def __init__(self, eps=1e-5):\n        pass\n")
    found = _rules(source, context)
    text = {rule: " | ".join(ds) for rule, ds in found.items()}
    assert "pid // BLOCK -> pid % BLOCK" in text["edit_operator"]
    assert "pid // BLOCK -> pid * BLOCK" not in text["edit_operator"]  # `//` goes to `%` or `/`
    assert "tl.float16 -> tl.float32" in text["edit_acc_dtype"]
    assert "2.0 -> 1e-05" in text["edit_constant"]  # the reference's constructor argument
    assert "grid[0] = n" in text["edit_grid"]
    assert "x_ptr -> out_ptr" in text["edit_variable"]  # pointers swap with pointers only
    assert "x_ptr -> n" not in text["edit_variable"]
    assert set(found) <= set(EDITS)
    # A one-row-per-program kernel that forgot its row offset: the address gets `pid * <size>`.
    no_offset = scale_candidate(("offs = pid * BLOCK + tl.arange(0, BLOCK)", "offs = tl.arange(0, BLOCK)"))
    offsets = [d for rule, ds in _rules(no_offset).items() if rule == "edit_row_offset" for d in ds]
    assert any("x_ptr + offs + pid * BLOCK" in d for d in offsets)
    assert any("out_ptr + offs + pid * n" in d for d in offsets)


def test_ranked_statements_come_first() -> None:
    source = scale_candidate()
    store_line = next(i for i, line in enumerate(source.splitlines(), 1) if "tl.store" in line)
    ranked = generate(source, None, [store_line], extra=MUTATIONS)
    assert ranked[0].line == store_line
    assert [rw.line for rw in ranked].count(store_line) >= 2
    only = generate(source, None, [store_line], only_ranked=True, extra=MUTATIONS)
    assert only and all(rw.line == store_line for rw in only)
    # candidates(): rules first, then the edit space in the ranked order.
    found = candidates(source, ranked_lines=[store_line])
    assert any(rw.rule.startswith("edit_") for rw in found)


def test_micro_tier_shrinks_sizes_to_small_odd_distinct_values_that_keep_tails() -> None:
    constants = {"batch": 128, "dim": 16384, "kernel": 3, "channels": 64}
    micro = micro_shape_overrides(constants)
    assert "kernel" not in micro  # constants below 8 are axes and kernel sizes: kept
    assert all(v % 2 == 1 and v < constants[k] for k, v in micro.items())  # a tail for every block size
    assert len(set(micro.values())) == len(micro)  # no square shape hides a transposed index
    assert micro["channels"] == max(micro.values())  # the last size spans the most lanes
    (case,) = cases_for_tier("micro", ProblemConfig(), constants)
    assert case.derived and dict(case.size_overrides) == micro
    # Equal constants (a 32 x 32 head, a square matrix) stay apart: a swapped size must fail the micro case.
    square = micro_shape_overrides({"seq_len": 32, "head_dim": 32})
    assert len(set(square.values())) == 2 and all(v % 2 == 1 and v < 32 for v in square.values())
    assert square["head_dim"] == max(square.values())
    (small,) = cases_for_tier("micro", ProblemConfig(), {"n": 5})
    assert small.size_overrides == ()  # nothing to shrink: the light case


def test_micro_tier_shows_a_tail_bug(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    # A grid by floor division leaves the last partial block unwritten; the micro shape (odd sizes) has one.
    source = scale_candidate(("triton.cdiv(n, 256)", "n // 256"))
    problem = load_problem(write_problem(tmp_path / "p", source, toml=LIGHT_TOML))
    report = evaluator.evaluate(problem, tier="micro").to_dict()
    (case,) = report["cases"]
    assert case["name"].startswith("micro") and case["counted"]
    assert report["verdict"] != "pass"
    fixed = evaluator.evaluate(problem.with_candidate(scale_candidate()), tier="micro").to_dict()
    assert fixed["verdict"] == "pass"


CELU_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float = 2.5):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return torch.nn.functional.celu(x, alpha=self.alpha)


rows = 8
cols = 96


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [2.5]
"""

# CELU's negative branch is `alpha * (exp(x / alpha) - 1)`: the helper keeps the outer alpha and forgets the
# inner one, right only for alpha = 1.
CELU_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _celu(x, alpha):
    return tl.maximum(x, 0.0) + tl.minimum(0.0, alpha * (tl.exp(x) - 1.0))


@triton.jit
def celu_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _celu(x, alpha), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.5):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        celu_kernel[(triton.cdiv(n, 256),)](x, out, n, self.alpha, BLOCK=256)
        return out
"""


def test_a_math_functions_argument_is_scaled_by_a_scalar_parameter_in_scope() -> None:
    found = _rules(CELU_CANDIDATE)["edit_argument_scale"]
    # The value itself is not a scale, and the kernel's size, block and pointers are no scalars to offer.
    assert found == [
        "_celu: tl.exp(x) -> tl.exp(x / alpha) (line 9)",
        "_celu: tl.exp(x) -> tl.exp(x * alpha) (line 9)",
    ]


def test_the_search_finds_the_inner_scale_celu_forgot(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    problem = load_problem(write_problem(tmp_path / "p", CELU_CANDIDATE, CELU_REFERENCE))

    def evaluate(source: str, tier: str) -> dict:
        return evaluator.evaluate(problem.with_candidate(source), tier=tier).to_dict()

    report = evaluate(CELU_CANDIDATE, "full")
    assert report["verdict"] == "mismatch"
    request = request_for(CELU_CANDIDATE, report=report, reference_source=CELU_REFERENCE)
    outcome = OfflinePatcher(evaluate, workers=2, namespace=str(tmp_path)).propose(request)
    assert outcome.proposal is not None, outcome.error
    assert "tl.exp(x / alpha)" in outcome.proposal.source
    assert evaluate(outcome.proposal.source, "full")["verdict"] == "pass"


RUNNING_MEAN_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        steps = torch.arange(1, x.shape[1] + 1, dtype=x.dtype, device=x.device)
        return torch.cumsum(x, dim=1) / steps


rows = 4
length = 100


def get_inputs():
    return [torch.randn(rows, length)]


def get_init_inputs():
    return []
"""

# A running mean walked in tiles with a carried sum: the divisor counts the tile's own lanes (`t + 1`), so
# it restarts at 1 in every tile after the first.
RUNNING_MEAN_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def running_mean_kernel(x_ptr, out_ptr, L, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK)
    carry = 0.0
    for l0 in range(0, L, BLOCK):
        pos = l0 + t
        mask = pos < L
        x = tl.load(x_ptr + row * stride + pos, mask=mask, other=0.0)
        total = tl.cumsum(x, axis=0) + carry
        count = (t + 1).to(tl.float32)
        tl.store(out_ptr + row * stride + pos, total / count, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, L = x.shape
        running_mean_kernel[(rows,)](x, out, L, x.stride(0), BLOCK=32)
        return out
"""


def test_a_tiles_own_lanes_are_replaced_by_its_global_index() -> None:
    found = _rules(RUNNING_MEAN_CANDIDATE)["edit_global_lanes"]
    # The read in `count`, and the ones in neither the global index's own definition nor anywhere else.
    assert found == ["running_mean_kernel: t -> pos (its tile's global index) (line 17)"]


def test_the_search_finds_the_global_count_of_a_tiled_running_mean(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    problem = load_problem(write_problem(tmp_path / "p", RUNNING_MEAN_CANDIDATE, RUNNING_MEAN_REFERENCE))

    def evaluate(source: str, tier: str) -> dict:
        return evaluator.evaluate(problem.with_candidate(source), tier=tier).to_dict()

    report = evaluate(RUNNING_MEAN_CANDIDATE, "full")
    assert report["verdict"] == "mismatch"
    request = request_for(RUNNING_MEAN_CANDIDATE, report=report, reference_source=RUNNING_MEAN_REFERENCE)
    outcome = OfflinePatcher(evaluate, workers=2, namespace=str(tmp_path)).propose(request)
    assert outcome.proposal is not None, outcome.error
    assert "count = (pos + 1)" in outcome.proposal.source
    assert evaluate(outcome.proposal.source, "full")["verdict"] == "pass"


# A transpose over a flat index split into (row, col) by the row count where the column count was meant.
TRANSPOSE_SPLIT = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, n, H: tl.constexpr, W: tl.constexpr, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    r = idx // H
    c = idx % H
    x = tl.load(x_ptr + idx, mask=mask)
    tl.store(out_ptr + c * H + r, x, mask=mask)
"""


def test_a_floor_division_and_remainder_pair_changes_its_divisor_together() -> None:
    found = _rules(TRANSPOSE_SPLIT)["edit_divmod_divisor"]
    assert "transpose_kernel: idx // H and idx % H -> W (line 11)" in found
    # One edit changes both halves of the split; a lone substitution is edit_variable's, not this one's.
    (edit,) = [
        rw
        for rw in generate(TRANSPOSE_SPLIT, None)
        if rw.rule == "edit_divmod_divisor" and rw.description.endswith("-> W (line 11)")
    ]
    assert "r = idx // W\n    c = idx % W\n" in edit.source and "c * H + r" in edit.source


def test_the_search_finds_contiguous_for_a_permuted_reshaped_softmax(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    problem = load_problem(write_problem(tmp_path / "p", SOFTMAX_DIM0_CANDIDATE, SOFTMAX_DIM0_REFERENCE))

    def evaluate(source: str, tier: str) -> dict:
        return evaluator.evaluate(problem.with_candidate(source), tier=tier).to_dict()

    report = evaluate(SOFTMAX_DIM0_CANDIDATE, "full")
    assert report["verdict"] == "mismatch"
    request = request_for(SOFTMAX_DIM0_CANDIDATE, report=report, reference_source=SOFTMAX_DIM0_REFERENCE)
    outcome = OfflinePatcher(evaluate, workers=2, namespace=str(tmp_path)).propose(request)
    assert outcome.proposal is not None, outcome.error
    assert ".contiguous()" in outcome.proposal.source and outcome.proposal.rule == "edit_contiguous"
    assert evaluate(outcome.proposal.source, "full")["verdict"] == "pass"


VAR_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.var(x, dim=-1, correction=0) + nn.functional.avg_pool1d(x, 3, ceil_mode=True).sum()
"""


def test_spec_checks_find_arguments_the_candidate_ignores_and_open_divisor_edits() -> None:
    source = scale_candidate(("x * 2.0", "x / n"))
    gaps = {g.argument: g.value for g in spec_gaps(VAR_REFERENCE, source)}
    assert gaps == {"correction": "0", "ceil_mode": "True"}  # dim=-1 is what a row kernel does anyway
    hypotheses = spec_hypotheses(VAR_REFERENCE, source)
    assert {h["bug_class"] for h in hypotheses} == {"spec_ignored_argument"}
    assert any("ceil_mode=True" in e for h in hypotheses for e in h["evidence"])
    edits = [rw.description for rw in generate(source, RuleContext(VAR_REFERENCE))]
    assert any("divide by (n - 1)" in d for d in edits)
    # A candidate that names the argument is not suspected of ignoring it.
    assert not spec_gaps(VAR_REFERENCE, source + "\n# correction ceil_mode\n")
    assert not [d for d in (rw.description for rw in generate(source)) if "divide by" in d]


POOL_OVERRIDE_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, divisor_override):
        super().__init__()
        self.pool = nn.AvgPool2d((1, 4), divisor_override=divisor_override)

    def forward(self, x):
        return self.pool(x)


rows = 6
n = 64


def get_inputs():
    return [torch.randn(1, 1, rows, n)]


def get_init_inputs():
    return [7]
"""

# The wrapper keeps the model's divisor_override and divides by its own window size.
POOL_OVERRIDE_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def window_mean(x_ptr, out_ptr, m, divisor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < m
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(4):
        acc += tl.load(x_ptr + offs * 4 + k, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc / divisor, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, divisor_override):
        super().__init__()
        self.window = 4
        self.divisor_override = divisor_override

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[:-1] + (x.shape[-1] // self.window,), device=x.device, dtype=x.dtype)
        m = out.numel()
        divisor = float(self.window)
        window_mean[(triton.cdiv(m, 128),)](x, out, m, divisor, BLOCK=128)
        return out
"""


def test_a_setting_kept_and_never_read_is_an_ignored_argument_and_an_edit(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    # Keeping the argument on self is not honouring it: the spec check names it all the same.
    gaps = spec_gaps(POOL_OVERRIDE_REFERENCE, POOL_OVERRIDE_CANDIDATE)
    assert [(g.argument, g.value) for g in gaps] == [("divisor_override", "divisor_override")]
    read = POOL_OVERRIDE_CANDIDATE.replace("(self.window)", "(self.divisor_override or self.window)")
    assert not spec_gaps(POOL_OVERRIDE_REFERENCE, read)
    found = _rules(POOL_OVERRIDE_CANDIDATE, RuleContext(POOL_OVERRIDE_REFERENCE))["edit_unread_attribute"]
    assert "divisor = self.divisor_override (line 27)" in found
    # Two seeds only: the kernel's window indexing assumes rows of a multiple of 4 (not what this tests).
    folder = write_problem(tmp_path / "p", POOL_OVERRIDE_CANDIDATE, POOL_OVERRIDE_REFERENCE, LIGHT_TOML)
    problem = load_problem(folder)

    def evaluate(source: str, tier: str) -> dict:
        return evaluator.evaluate(problem.with_candidate(source), tier=tier).to_dict()

    report = evaluate(POOL_OVERRIDE_CANDIDATE, "full")
    assert report["verdict"] == "mismatch"
    request = request_for(POOL_OVERRIDE_CANDIDATE, report=report, reference_source=POOL_OVERRIDE_REFERENCE)
    outcome = OfflinePatcher(evaluate, workers=2, namespace=str(tmp_path)).propose(request)
    assert outcome.proposal is not None, outcome.error
    forward = outcome.proposal.source.split("def forward")[1]
    assert "self.divisor_override" in forward, outcome.proposal.description
    assert evaluate(outcome.proposal.source, "full")["verdict"] == "pass"


VAR_FUNCTION_REFERENCE = """\
import torch
import torch.nn as nn


def pooled_var(input, dim=-1):
    return _var(input, dim) + nn.functional.avg_pool1d(input, 3, ceil_mode=True).sum()


def _var(input, dim):
    return torch.var(input, dim=dim, correction=0)


class Model(nn.Module):
    def forward(self, x):
        return pooled_var(x, dim=-1)
"""


def test_spec_checks_read_the_functions_a_tritonbench_reference_calls() -> None:
    """The operator's own calls sit in module functions the Model calls (through helpers too); a keyword
    bound to a parameter is the caller's value, read where the Model passes it."""
    source = scale_candidate(("x * 2.0", "x / n"))
    gaps = {g.argument: g.value for g in spec_gaps(VAR_FUNCTION_REFERENCE, source)}
    assert gaps == {"correction": "0", "ceil_mode": "True"}
    # The functions' literals and named constants are the reference's numbers for constant edits.
    source = scale_candidate(("x * 2.0", "x * 0.25"))
    named = "    alpha = 0.375\n    return alpha * torch.var"
    reference = VAR_FUNCTION_REFERENCE.replace("    return torch.var", named)
    constants = " | ".join(_rules(source, RuleContext(reference)).get("edit_constant", []))
    assert "0.25 -> 0.375" in constants and "0.25 -> 3.0" in constants


ROW_BROADCAST = """\
import torch
import triton
import triton.language as tl


@triton.jit
def row_scale_kernel(x_ptr, s_ptr, w_ptr, b_ptr, out_ptr, n, C, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r = offs // N
    c = offs % N
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(s_ptr + c, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + pid)
    b = tl.load(b_ptr + pid)
    tl.store(out_ptr + offs, x * s * w + b, mask=mask & (c < N))


def row_scale(x, scale, weight, bias):
    out = torch.empty_like(x)
    n = scale.numel()
    row_scale_kernel[(triton.cdiv(n, 128),)](x, scale, weight, bias, out, n, 4, x.shape[1], BLOCK=128)
    return out
"""


def test_edits_reach_loads_cast_after_reading_sizes_of_other_tensors_and_wrapped_indices() -> None:
    found = _rules(ROW_BROADCAST)
    text = {rule: " | ".join(ds) for rule, ds in found.items()}
    # A load read through `.to(...)` is still an address whose index can be another index.
    assert "c -> r (line 14)" in text["edit_variable"]
    # A size read from the wrong tensor of the wrapper (a broadcast operand, not the output).
    assert "row_scale: scale.numel -> out.numel (line 22)" in text["edit_size_tensor"]
    assert "row_scale: scale.numel -> x.numel" in text["edit_size_tensor"]
    # A per-channel operand read at the program id wraps at a size the kernel is handed, alone and together.
    assert "pid -> pid % C in w_ptr + pid (line 15)" in text["edit_index_wrap"]
    assert "every load at pid reads at pid % C (line 15)" in text["edit_index_wrap"]
    assert "pid % BLOCK" not in text["edit_index_wrap"]  # a block size is no extent of the data
    # An index in a bound check stands in for another index, as it does in an address.
    assert "c -> r (line 17)" in text["edit_variable"]


def test_two_mistakes_in_one_statement_are_fixed_by_a_pair_of_edits(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    # `x * 3.0 + 1.0` for `x * 2.0`: either single fix leaves every element wrong, so neither gains.
    source = scale_candidate(("x * 2.0", "x * 3.0 + 1.0"))
    # The constant behind a method: the reference-formula rule cannot read it, only the search can.
    problem = load_problem(write_problem(tmp_path / "p", source, OPAQUE_SCALE_REFERENCE, toml=LIGHT_TOML))

    def evaluate(text: str, tier: str) -> dict:
        return evaluator.evaluate(problem.with_candidate(text), tier=tier).to_dict()

    store = next(i for i, line in enumerate(source.splitlines(), 1) if "tl.store" in line)
    request = request_for(source, report=evaluate(source, "full"), reference_source=problem.reference_source)
    patcher = OfflinePatcher(
        evaluate, workers=2, namespace=str(tmp_path), localise=lambda _s, _r: [store], time_budget_s=600
    )
    outcome = patcher.propose(request)
    assert outcome.proposal is not None
    report = evaluate(outcome.proposal.source, "full")
    if report["verdict"] != "pass":
        # Not a pair: then a single edit that brought the numbers much nearer (mismatch.closer), and the
        # second mistake is the next proposal's.
        assert closer(request.report, report), outcome.proposal.description
        nearer = outcome.proposal.source
        follow = request_for(nearer, report=report, reference_source=problem.reference_source)
        outcome = patcher.propose(follow)
        assert outcome.proposal is not None
    assert evaluate(outcome.proposal.source, "full")["verdict"] == "pass"
    assert "x * 2.0" in outcome.proposal.source and "+ 1.0" not in outcome.proposal.source


ROW_LSE_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.logsumexp(x, dim=-1)


BATCH = 4
ROWS = 12
D = 64


def get_inputs():
    return [torch.randn(BATCH, ROWS, D)]


def get_init_inputs():
    return []
"""

# One program per row, but the grid counts the blocks of one row (one program): every other row of the
# `torch.empty` output is never written. The block is the row length itself, so odd lengths are outside the
# kernel's domain (the micro tier's own shape among them).
ROW_LSE_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_lse(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + cols, mask=cols < n, other=-float("inf"))
    top = tl.max(x, axis=0)
    total = tl.sum(tl.exp(x - top), axis=0)
    tl.store(out_ptr + pid, top + tl.log(total))


class ModelNew(nn.Module):
    def forward(self, x):
        d = x.shape[-1]
        out = torch.empty(x.shape[:-1], dtype=x.dtype)
        block = min(d, 1024)
        grid = (triton.cdiv(d, 1024),)
        row_lse[grid](x, out, d, BLOCK=block)
        return out
"""


def test_a_grid_too_small_for_the_output_is_sized_by_the_output(tmp_path: Path, evaluator) -> None:  # type: ignore[no-untyped-def]
    found = {rw.description for rw in generate(ROW_LSE_CANDIDATE, None, [22])}
    assert {"forward: grid[0] = out.numel()", "forward: grid[0] = x.numel() // x.shape[-1]"} <= {
        d.split(" (line")[0] for d in found
    }
    # Localisation points at the launch (line 23) that leaves the output unwritten, not at the tuple it
    # reads two lines up: the grid's edits rank with the launch, ahead of the kernel's statements.
    ranked = generate(ROW_LSE_CANDIDATE, None, [23, 11])
    grid_first = next(i for i, rw in enumerate(ranked) if rw.description.startswith("forward: grid[0] = out"))
    assert grid_first < next(i for i, rw in enumerate(ranked) if rw.line == 11), ranked[:5]
    problem = load_problem(write_problem(tmp_path / "p", ROW_LSE_CANDIDATE, ROW_LSE_REFERENCE))

    def evaluate(source: str, tier: str) -> dict:
        return evaluator.evaluate(problem.with_candidate(source), tier=tier).to_dict()

    report = evaluate(ROW_LSE_CANDIDATE, "full")
    assert report["verdict"] == "mismatch"
    micro = evaluate(ROW_LSE_CANDIDATE, "micro")
    assert 0 <= light_score(micro) < 1  # judged on the micro tier's other shapes, not "cannot judge"
    request = request_for(ROW_LSE_CANDIDATE, report=report, reference_source=ROW_LSE_REFERENCE)
    outcome = OfflinePatcher(evaluate, workers=2, namespace=str(tmp_path)).propose(request)
    assert outcome.proposal is not None, outcome.error
    assert outcome.proposal.rule == "edit_grid"
    assert evaluate(outcome.proposal.source, "full")["verdict"] == "pass"


# Two kernels in one wrapper; the second is handed the first one's output instead of the input.
CHAINED_WRONG_INPUT = """\
import torch
import triton
import triton.language as tl


@triton.jit
def double(a, b, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(b + offs, tl.load(a + offs, mask=offs < n) * 2.0, mask=offs < n)


@triton.jit
def halve(a, b, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(b + offs, tl.load(a + offs, mask=offs < n) * 0.5, mask=offs < n)


def both(x, scale: float = 1.0):
    doubled = torch.empty_like(x)
    halved = torch.empty_like(x)
    n = x.numel()
    double[(triton.cdiv(n, 256),)](x, doubled, n, BLOCK=256)
    halve[(triton.cdiv(n, 256),)](doubled, halved, n, BLOCK=256)
    return doubled, halved
"""


def test_a_tensor_handed_to_a_launch_can_become_another_tensor_of_the_wrapper() -> None:
    found = [rw for rw in generate(CHAINED_WRONG_INPUT, None, [24]) if rw.rule == "edit_launch_tensor"]
    fixes = [rw for rw in found if "halve[(triton.cdiv(n, 256),)](x, halved, n, BLOCK=256)" in rw.source]
    assert len(fixes) == 1 and "launch argument doubled -> x" in fixes[0].description
    # Scalars and the wrapper's float parameter are never offered as tensors.
    assert not any("-> n" in rw.description or "-> scale" in rw.description for rw in found)


def test_a_launch_flag_computed_from_a_test_can_be_set_to_each_constant() -> None:
    source = """\
import torch
import triton


def lse(x):
    z = torch.empty(x.shape[0], device=x.device)
    HAS_SCALE = x.dtype != torch.float32
    lse_kernel[(x.shape[0],)](x, z, x.shape[1], BLOCK=1024, HAS_SCALE=HAS_SCALE, EVEN=x.shape[1] % 2 == 0)
    return z
"""
    offered = {rw.description for rw in generate(source) if rw.rule == "edit_flag"}
    assert offered == {
        "lse: HAS_SCALE = True, not x.dtype != torch.float32 (line 7)",
        "lse: HAS_SCALE = False, not x.dtype != torch.float32 (line 7)",
        "lse: EVEN = True, not x.shape[1] % 2 == 0 (line 8)",
        "lse: EVEN = False, not x.shape[1] % 2 == 0 (line 8)",
    }  # sizes and plain names are no flags


def test_a_function_the_reference_does_not_apply_can_be_dropped() -> None:
    source = scale_candidate(("out_ptr + offs, x * 2.0", "out_ptr + offs, tl.log(x) * 2.0"))
    found = candidates(source, [])
    unwrapped = [rw for rw in found if rw.description.startswith("scale_kernel: tl.log(x) -> x")]
    assert len(unwrapped) == 1 and "tl.log" not in unwrapped[0].source
    assert unwrapped[0].source == scale_candidate()


def test_a_cuda_style_blocks_threads_launch_becomes_one_axis_for_an_axis_0_kernel() -> None:
    cuda = scale_candidate(("scale_kernel[(triton.cdiv(n, 256),)]", "scale_kernel[triton.cdiv(n, 256), 128]"))
    offered = {rw.source for rw in candidates(cuda, []) if rw.rule == "edit_grid"}
    assert scale_candidate() in offered  # every program repeated 128 times: back to one axis
    both_axes = cuda.replace("tl.program_id(0)", "tl.program_id(0) + 0 * tl.program_id(1)")
    assert not any("grid = (" in rw.description for rw in candidates(both_axes, []) if rw.rule == "edit_grid")


def test_rounding_edits_turn_floor_into_ceiling_division_and_back() -> None:
    source = scale_candidate(("triton.cdiv(n, 256)", "n // 256"))
    source = source.replace("pid * BLOCK", "tl.cdiv(pid, 1) * BLOCK")
    found = {rw.description: rw.source for rw in generate(source) if rw.rule == "edit_rounding"}
    # The host rounds with triton.cdiv, a kernel with tl.cdiv; each way round is offered.
    assert any("n // 256 -> triton.cdiv(n, 256)" in d for d in found), found
    assert any("tl.cdiv(pid, 1) -> pid // 1" in d for d in found), found
    written = "def f(n, b):\n    return (n + b - 1) // b, math.ceil(n / b)\n"
    idiom = {rw.description for rw in generate(written) if rw.rule == "edit_rounding"}
    assert "f: (n + b - 1) // b -> n // b (line 2)" in idiom
    assert "f: math.ceil -> math.floor (line 2)" in idiom
    assert not any("triton.cdiv((n + b - 1)" in d for d in idiom)  # a ceiling is not rounded up again


def test_a_wrong_output_size_gains_a_term_that_closes_the_shape_gap() -> None:
    def context(got: int) -> RuleContext:
        crash = explain_output(
            "shape_mismatch", PAD_CANDIDATE, [([8, got], "float32")], [([8, 106], "float32")], []
        )
        return RuleContext.from_reference(PAD_REFERENCE, {"crash": crash})

    found = {rw.description for rw in generate(PAD_CANDIDATE, context(103)) if rw.rule == "edit_size_term"}
    # self.padding is 3 (the constructor's argument): + 3 closes the gap of 3; + 6 and - 3 cannot.
    assert "forward: L + self.padding -> L + self.padding + self.padding (line 25)" in found, found
    assert not any("+ 2 * self.padding" in d or "- self.padding" in d for d in found), found
    # A gap of 6 takes twice the attribute; a right shape takes no size edit at all.
    twice = {rw.description for rw in generate(PAD_CANDIDATE, context(100)) if rw.rule == "edit_size_term"}
    assert "forward: L + self.padding -> L + self.padding + 2 * self.padding (line 25)" in twice, twice
    assert not [rw for rw in generate(PAD_CANDIDATE, context(106)) if rw.rule == "edit_size_term"]


def test_a_size_formula_is_found_in_the_caller_of_the_allocating_launcher_and_in_an_allocation() -> None:
    # forward computes `L_out` and hands it to `launch`, which allocates with it: the formula is in forward,
    # and its locals `stride, padding = self.conv.stride[0], self.conv.padding[0]` take the constructor's
    # values (3 and 1), so only `- 2 * padding` closes the gap of -2.
    found = {
        rw.description
        for rw in generate(CONVT_CANDIDATE, convt_context(CONVT_CANDIDATE))
        if rw.rule == "edit_size_term"
    }
    fix = "forward: (x.shape[2] - 1) * stride + K -> (x.shape[2] - 1) * stride + K - 2 * padding (line 45)"
    assert found == {fix}, found
    # Written inside `torch.empty((N, C_out, ...))` with sizes whose values are not known here: the terms
    # shrink the size (the gap is negative), and the bias handed to the kernel as a pointer is no term.
    inline = [
        rw
        for rw in generate(CONVT_INLINE_CANDIDATE, convt_context(CONVT_INLINE_CANDIDATE))
        if rw.rule == "edit_size_term"
    ]
    terms = {rw.description.rpartition(" + K ")[2].rpartition(" (line")[0] for rw in inline}
    assert terms == {"- stride", "- 2 * stride", "- padding", "- 2 * padding"}, terms
    assert any("(L_in - 1) * stride + K - 2 * padding), device" in rw.source for rw in inline)


def test_an_index_term_gains_the_stride_it_lost_alone_and_with_its_twin() -> None:
    context = RuleContext.from_reference(CONV2D_REFERENCE)
    edits = generate(CONV2D_CANDIDATE, context)
    found = {rw.description: rw for rw in edits if rw.rule == "edit_index_scale"}
    assert "conv2d_kernel: oh -> oh * stride in oh - pad + kh (line 21)" in found, sorted(found)
    both = found["conv2d_kernel: every oh / ow times stride (line 21)"].source
    assert "ih = oh * stride - pad + kh" in both and "iw = ow * stride - pad + kw" in both
    # Sizes that flatten an index (channels, extents, divisors) are not scales a term lost.
    scales = {d.split(" in ")[0].rpartition(" * ")[2] for d in found if " -> " in d}
    assert scales == {"stride"}, sorted(found)


def test_a_function_the_reference_applies_wraps_one_value_of_the_kernel_that_never_applies_it() -> None:
    edits = generate(PNORM_CANDIDATE, RuleContext.from_reference(PNORM_REFERENCE))
    found = {rw.description: rw for rw in edits if rw.rule == "edit_missing_function"}
    loaded = "pnorm_kernel: tl.abs(tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0))"
    assert loaded + " (line 13)" in found, sorted(found)
    assert "pnorm_kernel: tl.abs(x * x * x) (line 14)" in found
    # Indices, masks and the accumulator's zeros are not data; a kernel that applies abs gets no abs edit.
    assert not any("tl.abs(row" in d or "tl.abs(start" in d or "tl.abs(tl.zeros" in d for d in found)
    applied = PNORM_CANDIDATE.replace("acc += x * x * x", "acc += tl.abs(x) * x * x")
    again = generate(applied, RuleContext.from_reference(PNORM_REFERENCE))
    wrapped = [rw.description.split(": ", 1)[1] for rw in again if rw.rule == "edit_missing_function"]
    assert wrapped and not any(w.startswith(("tl.abs(", "store tl.abs(")) for w in wrapped), wrapped
    # A reference that applies nothing of the kind: no edit.
    plain = PNORM_REFERENCE.replace("torch.linalg.vector_norm(x, ord=self.p, dim=1)", "x.sum(dim=1)")
    assert not [
        rw
        for rw in generate(PNORM_CANDIDATE, RuleContext.from_reference(plain))
        if rw.rule == "edit_missing_function"
    ]


def test_two_updates_of_one_value_trade_places_when_nothing_between_them_touches_it() -> None:
    edits = generate(LINEAR_RELU_CANDIDATE, RuleContext.from_reference(LINEAR_RELU_REFERENCE))
    moved = [rw for rw in edits if rw.rule == "edit_statement_order"]
    # The ReLU moves after the bias; the bias update cannot move before the load of `bias` it reads.
    assert [rw.description for rw in moved] == [
        "linear_relu_kernel: acc = tl.maximum(acc, 0.0) moved after acc = acc + bias[None, :] (line 22)"
    ]
    lines = moved[0].source.splitlines()
    assert lines.index("    acc = acc + bias[None, :]") < lines.index("    acc = tl.maximum(acc, 0.0)")
    # The swap changes both statements: it ranks with the more suspect one (where agreement is first lost).
    bias_line = next(
        i for i, line in enumerate(LINEAR_RELU_CANDIDATE.splitlines(), 1) if "acc = acc + bias" in line
    )
    ranked = generate(LINEAR_RELU_CANDIDATE, RuleContext.from_reference(LINEAR_RELU_REFERENCE), [bias_line])
    first_rules = [rw.rule for rw in ranked[:30]]
    assert "edit_statement_order" in first_rules, first_rules
    # An update of the value between them (here a store of it) pins the order.
    pinned = LINEAR_RELU_CANDIDATE.replace(
        "    bias = tl.load(", "    tl.store(y_ptr, acc)\n    bias = tl.load("
    )
    edits = generate(pinned, RuleContext.from_reference(LINEAR_RELU_REFERENCE))
    assert not [rw for rw in edits if rw.rule == "edit_statement_order"]


ROWS_SOFTMAX_CANDIDATE = """\
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=-float("inf"))
    x_max = tl.max(x)
    e = tl.exp(x - x_max)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], e / tl.sum(e), mask=mask)
"""


def test_a_tile_of_rows_reduced_as_one_block_gets_every_reduction_per_row_kept_2d() -> None:
    # Softmax over the flattened tile instead of per row: both reductions need the axis, and keep_dims so
    # that `x - x_max` still broadcasts over the tile.
    edits = generate(ROWS_SOFTMAX_CANDIDATE)
    found = {rw.description: rw.source for rw in edits if rw.rule == "edit_reduction"}
    every = found["softmax_rows_kernel: every whole-tile reduction per axis 1, keep_dims=True (line 11)"]
    assert "x_max = tl.max(x, axis=1, keep_dims=True)" in every
    assert "e / tl.sum(e, axis=1, keep_dims=True)" in every
    assert "softmax_rows_kernel: tl.max(..., axis=1, keep_dims=True) (line 11)" in found


CHANNEL_CANDIDATE = """\
import triton
import triton.language as tl


@triton.jit
def bn_kernel(x_ptr, mean_ptr, var_ptr, y_ptr, n, C, HW, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ch = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + ch, mask=mask, other=0.0)
    var = tl.load(var_ptr + offs, mask=mask, other=1.0)
    y = (x - mean) / tl.sqrt(var + eps)
    tl.store(y_ptr + offs, y, mask=mask)
"""


def test_an_index_named_like_nothing_we_know_stands_in_for_another_index_inside_an_address() -> None:
    # `ch` is an index by what computes it (the lanes, no load), not by its name: the per-channel load
    # indexed by element offset gets it.
    found = {rw.description for rw in generate(CHANNEL_CANDIDATE) if rw.rule == "edit_variable"}
    assert "bn_kernel: offs -> ch (line 12)" in found, found
    assert "bn_kernel: ch -> offs (line 11)" in found
    # Outside an address (the mask, the channel formula) and for data (`y`, `x`), no such substitution.
    assert "bn_kernel: offs -> ch (line 8)" not in found and "bn_kernel: offs -> ch (line 9)" not in found
    assert not any(d.endswith(f"-> {data} (line 12)") for d in found for data in ("x", "y", "mean")), found


GROUPED_TILES = """\
import triton
import triton.language as tl


@triton.jit
def tiles(c_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    rows_here = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % rows_here)
    pid_n = (pid % in_group) // GROUP_M
    tl.store(c_ptr + pid_m * N + pid_n, 1.0)
"""


def test_a_clamp_and_the_bound_it_clamps_stand_in_for_each_other() -> None:
    # The last group of tiles has fewer rows than GROUP_M: dividing by the bound instead of the clamped count
    # maps its tiles wrong. The names share no spelling (a constexpr and a local), the clamp relates them.
    found = {rw.description for rw in generate(GROUPED_TILES) if rw.rule == "edit_variable"}
    assert "tiles: GROUP_M -> rows_here (line 14)" in found, found
    assert "tiles: rows_here -> GROUP_M (line 13)" in found
    assert not any("(line 12)" in d and "-> rows_here" in d for d in found)  # never inside the clamp itself


ROW_AFFINE_CANDIDATE = """\
import triton
import triton.language as tl


@triton.jit
def row_affine_kernel(x_ptr, mean_ptr, var_ptr, scale_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.load(mean_ptr)
    var = tl.load(var_ptr)
    w = tl.load(scale_ptr + row)
    tl.store(y_ptr + row * stride + tl.arange(0, BLOCK), (x - mean) / tl.sqrt(var) * w, mask=mask)
"""


def test_a_per_column_parameter_read_as_a_scalar_gets_the_lanes_and_their_mask() -> None:
    # Mean and variance per column, read as scalars; the per-row scale may be meant.
    edits = generate(ROW_AFFINE_CANDIDATE)
    found = {rw.description: rw.source for rw in edits if rw.rule == "edit_lane_term"}
    assert "row_affine_kernel: tl.load(mean_ptr) -> tl.load(mean_ptr + cols, mask=mask) (line 11)" in found
    both = found["row_affine_kernel: every bare pointer load reads at + cols (2 loads) (line 11)"]
    assert "var = tl.load(var_ptr + cols, mask=mask)" in both
    assert "mean = tl.load(mean_ptr + cols, mask=mask)" in both and "tl.load(scale_ptr + row)" in both
    assert "row_affine_kernel: every scalar load reads at + cols (3 loads) (line 11)" in found
    # An inline arange of another access is a lane term too; the pointers themselves never are.
    assert any(d.endswith("+ tl.arange(0, BLOCK), mask=mask) (line 13)") for d in found), found
    assert not any("+ x_ptr" in d or "+ y_ptr" in d or "reads at + row " in d for d in found), found


def test_a_scale_moves_among_the_terms_of_a_sum_of_data_but_never_of_an_index() -> None:
    edits = generate(ADDCMUL_CANDIDATE, RuleContext.from_reference(ADDCMUL_REFERENCE))
    moved = {rw.description.split(": ", 1)[1] for rw in edits if rw.rule == "edit_factor_placement"}
    assert "(x + a * b) * value -> x + a * b * value (line 14)" in moved, moved
    assert "(x + a * b) * value -> x * value + a * b (line 14)" in moved, moved
    back = ADDCMUL_CANDIDATE.replace("out = (x + a * b) * value", "out = x + a * b * value")
    edits = generate(back, RuleContext.from_reference(ADDCMUL_REFERENCE))
    moved = {rw.description.split(": ", 1)[1] for rw in edits if rw.rule == "edit_factor_placement"}
    assert "x + a * b * value -> (x + a * b) * value (line 14)" in moved, moved
    # `x_ptr + offs` and `pid * BLOCK + arange` are indices: no scale moves there.
    assert not any("BLOCK" in d or "offs" in d for d in moved), moved


SCALED_EPILOGUE = """\
import triton
import triton.language as tl


@triton.jit
def epilogue(acc_ptr, bias_ptr, out_ptr, alpha, beta, n, stride_a, stride_b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(acc_ptr + offs * stride_a, mask=mask)
    bias = tl.load(bias_ptr + offs * stride_b, mask=mask)
    result = alpha * bias + beta * acc  # the scales exchanged: baddbmm is beta * bias + alpha * acc
    tl.store(out_ptr + offs, result, mask=mask)
"""


def test_two_names_of_one_kind_swap_within_a_statement() -> None:
    # One substitution leaves a scale in both places; the swap exchanges them in that statement only.
    found = {rw.description: rw.source for rw in generate(SCALED_EPILOGUE) if rw.rule == "edit_swap_names"}
    swap = "epilogue: alpha <-> beta in result = alpha * bias + beta * acc"
    key = next(d for d in found if d.startswith(swap))
    assert "result = beta * bias + alpha * acc" in found[key]
    assert "epilogue(acc_ptr, bias_ptr, out_ptr, alpha, beta," in found[key]  # the signature is untouched
    assert not any("acc_ptr <-> bias_ptr" in d for d in found)  # pointers: edit_variable and the launch
    assert not any(d.startswith("epilogue: stride_a <-> stride_b") for d in found)  # never in one statement


CLAMP_THEN_SQUARE = """\
import triton
import triton.language as tl


@triton.jit
def hinge_kernel(x_ptr, out_ptr, n, margin, P: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    d = margin - x
    hinge = tl.where(d > 0, d, 0.0)
    if P == 2:
        hinge = d * d
    tl.store(out_ptr + offs, hinge, mask=mask)
    y = tl.exp(x)
    tl.store(out_ptr + n + offs, x, mask=mask)
"""


def test_a_statement_reads_the_value_a_step_before_the_one_left_unread() -> None:
    found = _rules(CLAMP_THEN_SQUARE).get("edit_stale_read", [])
    # The clamp is overwritten unread on the P == 2 path: the square reads `d` where `hinge` was meant (both
    # reads at once), and nothing before the overwrite other than it.
    assert "hinge_kernel: d -> hinge (the value line 11 computed from it) (line 13)" in found
    edits = [rw for rw in generate(CLAMP_THEN_SQUARE) if rw.rule == "edit_stale_read"]
    sources = {rw.description: rw.source for rw in edits}
    assert "hinge = hinge * hinge" in sources[found[0]]
    # A value never read at all (`y`): a later statement reading what it was computed from may have meant it.
    assert "hinge_kernel: x -> y (the value line 15 computed from it) (line 16)" in found
    # A value that is read (`d`, `hinge` on the other path) offers nothing; nor do loads' pointers.
    assert not any(" -> d " in f or "x_ptr" in f or "offs ->" in f for f in found), found


TEST_BEFORE_TRANSFORM = """\
import triton
import triton.language as tl


@triton.jit
def shrink_kernel(x_ptr, out_ptr, n, lam, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    act = tl.where(x > 0, x, 0.1 * x)
    shifted = offs + 1
    keep = x > lam
    tl.store(out_ptr + offs, tl.where(keep, act, 0.0), mask=mask & (shifted > 0))
"""


def test_a_test_on_the_data_from_before_its_transform_reads_the_transformed_value() -> None:
    found = _rules(TEST_BEFORE_TRANSFORM).get("edit_stale_read", [])
    # `act` is read (by the store), but the threshold between its step and that read tests `x`.
    assert "shrink_kernel: x -> act (the value line 10 computed from it) (line 12)" in found
    # Only data stands for data: the index arithmetic between the two is no stale read of `x`.
    assert not any("offs ->" in f for f in found), found


TILES_WITHOUT_THEIR_AXIS = """\
import torch
import triton
import triton.language as tl


@triton.jit
def tile_kernel(x_ptr, out_ptr, R, L, stride, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    mask = (rows[:, None] < R) & (cols[None, :] < L)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows[:, None] * stride + cols[None, :], x * 2.0, mask=mask)


def double(x):
    R, L = x.shape
    out = torch.empty_like(x)
    BLOCK_R = 16
    BLOCK_L = 32
    grid = (triton.cdiv(R, BLOCK_R),)
    tile_kernel[grid](x, out, R, L, x.stride(0), BLOCK_R=BLOCK_R, BLOCK_L=BLOCK_L)
    return out
"""


def test_a_grid_missing_an_axis_the_kernel_reads_gets_it_as_a_count_of_blocks() -> None:
    found = [rw for rw in generate(TILES_WITHOUT_THEIR_AXIS) if rw.rule == "edit_grid"]
    added = [rw.description for rw in found if "grid gets a dimension" in rw.description]
    # Columns tiled by program_id(1) under a 1-D grid: the axis's count of blocks, not one program per column.
    assert "double: grid gets a dimension triton.cdiv(L, BLOCK_L) (line 20)" in added
    assert found[0].description.startswith("double: grid gets a dimension")  # before resizing the axis it has
    # A kernel that reads axis 0 only gets no block counts for an axis it never reads.
    one_axis = TILES_WITHOUT_THEIR_AXIS.replace("tl.program_id(1) * BLOCK_L", "0 * BLOCK_L")
    added = [rw.description for rw in generate(one_axis) if "grid gets a dimension" in rw.description]
    assert added and not any("cdiv" in d for d in added)


def test_an_accumulation_changes_direction() -> None:
    # `acc += w * v` where each term is subtracted (a difference's weights of the opposite sign).
    found = _rules(
        CLAMP_THEN_SQUARE.replace(
            "    hinge = tl.where", "    acc = 0.0\n    acc += x * d\n    hinge = tl.where"
        )
    )
    assert "hinge_kernel: acc += x * d -> acc -= x * d (line 12)" in found["edit_operator"]
