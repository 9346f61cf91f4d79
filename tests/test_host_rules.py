"""Host-side rules: the wrapper's dtype, final reduction, launch sizes and scales follow the reference."""

from __future__ import annotations

import textwrap

import pytest
from kernel_medic.tools.repair.rules import host as host_rules
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.rules.registry import propose

HEADER = "import math\n\nimport torch\nimport triton\nimport triton.language as tl\n\n\n"


def module(body: str) -> str:
    return HEADER + textwrap.dedent(body).lstrip("\n")


def changed_lines(old: str, new: str) -> list[str]:
    a, b = old.splitlines(), new.splitlines()
    assert len(a) == len(b)
    return [y.strip() for x, y in zip(a, b) if x != y]


def options(source: str, rule: str, context: RuleContext | None = None) -> list[list[str]]:
    return [changed_lines(source, r.source) for r in propose(source, [rule], context)]


ARGMAX = module("""
    class ModelNew(torch.nn.Module):
        def forward(self, x):
            out = torch.empty(x.shape[0], device=x.device, dtype=torch.int32)
            argmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=128)
            return out
""")


def test_expected_output_dtype_follows_the_reported_reference_dtype() -> None:
    report = {
        "cases": [{"name": "seed0", "analysis": {"reference_dtype": "int64", "candidate_dtype": "int32"}}]
    }
    context = RuleContext.from_reference("", report)
    assert context.output_dtype == "int64"
    assert options(ARGMAX, "expected_output_dtype", context) == [
        ["out = torch.empty(x.shape[0], device=x.device, dtype=torch.int64)"]
    ]


def test_expected_output_dtype_reads_the_dtype_symptom() -> None:
    report = {
        "symptoms": [
            "output dtype int32 differs from the reference dtype int64 (cast to int64, values match)"
        ]
    }
    assert RuleContext.from_reference("", report).output_dtype == "int64"


def test_expected_output_dtype_needs_a_reported_dtype_and_a_difference() -> None:
    assert options(ARGMAX, "expected_output_dtype", RuleContext.from_reference("")) == []
    same = RuleContext.from_reference("", {"reference_dtype": "int32"})
    assert options(ARGMAX, "expected_output_dtype", same) == []


LOSS = module("""
    class ModelNew(torch.nn.Module):
        def forward(self, logits, targets):
            losses = torch.empty(logits.shape[0], device=logits.device)
            ce_kernel[(logits.shape[0],)](logits, targets, losses, logits.shape[1], BLOCK=32)
            return losses.sum() / logits.shape[0]
""")
IGNORING = "import torch.nn as nn\nclass Model(nn.Module):\n    loss = nn.CrossEntropyLoss(ignore_index=-1)\n"
SUMMING = (
    "import torch.nn.functional as F\ndef forward(a, b):\n    return F.mse_loss(a, b, reduction='sum')\n"
)


def test_loss_reduction_averages_over_non_ignored_targets() -> None:
    found = options(LOSS, "loss_reduction", RuleContext.from_reference(IGNORING))
    assert found[0] == ["return losses.sum() / (targets != -1).sum()"]


def test_loss_reduction_sum_drops_the_division() -> None:
    assert options(LOSS, "loss_reduction", RuleContext.from_reference(SUMMING)) == [["return losses.sum()"]]


def test_loss_reduction_mean_divides_a_bare_sum() -> None:
    source = LOSS.replace("losses.sum() / logits.shape[0]", "losses.sum()")
    mean = RuleContext.from_reference("import torch.nn.functional as F\nF.l1_loss(a, b)\n")
    assert ["return losses.sum() / logits.numel()"] in options(source, "loss_reduction", mean)


def test_loss_reduction_leaves_what_is_not_a_loss() -> None:
    assert options(LOSS, "loss_reduction", RuleContext.from_reference("torch.sum(x)")) == []


CAPPED = module("""
    class ModelNew(torch.nn.Module):
        def forward(self, x):
            n_rows, n_cols = x.shape
            BLOCK = min(triton.next_power_of_2(n_cols), 512)
            row_sum[(n_rows,)](x, n_cols, BLOCK=BLOCK)
""")


def test_block_uncapped_covers_the_row() -> None:
    assert options(CAPPED, "block_uncapped") == [["BLOCK = triton.next_power_of_2(n_cols)"]]
    assert (
        options(
            CAPPED.replace("min(triton.next_power_of_2(n_cols), 512)", "min(n_cols, 512)"), "block_uncapped"
        )
        == []
    )


ROW_KERNEL = module("""
    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * stride + cols, x - tl.max(x, axis=0), mask=cols < n_cols)


    def softmax(x):
        n_rows, n_cols = x.shape
        BLOCK_SIZE = 128
        y = torch.empty_like(x)
        softmax_kernel[(n_rows,)](y, x, x.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return y
""")


def test_a_one_block_row_kernel_gets_a_block_as_long_as_its_row_at_launch() -> None:
    whole = [
        "softmax_kernel[(n_rows,)](y, x, x.stride(0), n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))"
    ]
    assert options(ROW_KERNEL, "block_uncapped") == [whole]
    # A power of 2 capped in a second statement is a cap too.
    pow2 = "BLOCK_SIZE = triton.next_power_of_2(n_cols)"
    capped = ROW_KERNEL.replace("BLOCK_SIZE = 128", f"{pow2}\n    BLOCK_SIZE = min(BLOCK_SIZE, 64)")
    assert options(capped, "block_uncapped") == [whole]
    # Already the row's power of 2, or programs that tile the row, or a loop over it: no edit.
    assert options(ROW_KERNEL.replace("BLOCK_SIZE = 128", pow2), "block_uncapped") == []
    tiled = ROW_KERNEL.replace("cols = tl.arange", "cols = row * BLOCK_SIZE + tl.arange")
    assert options(tiled, "block_uncapped") == []
    pid = "    row = tl.program_id(0)"
    looped = ROW_KERNEL.replace(pid, f"{pid}\n    for i in range(2):\n        pass")
    assert options(looped, "block_uncapped") == []


ROWS = module("""
    class ModelNew(torch.nn.Module):
        def forward(self, x):
            n_cols = x.shape[-1]
            n_rows = x.shape[0]
            l2_kernel[(n_rows,)](x, n_cols, BLOCK=128)
""")


def test_rows_from_numel_counts_every_row_of_an_nd_input() -> None:
    assert options(ROWS, "rows_from_numel") == [["n_rows = x.numel() // n_cols"]]
    assert options(ROWS.replace("n_cols = x.shape[-1]", "n_cols = 64"), "rows_from_numel") == []


SCALE = module("""
    class ModelNew(torch.nn.Module):
        def forward(self, q, k, v):
            sm_scale = 1.0 / math.sqrt(q.shape[-2])
            attention[(1,)](q, k, v, sm_scale)
""")


def test_shape_in_scale_offers_the_other_dimensions() -> None:
    found = options(SCALE, "shape_in_scale")
    assert ["sm_scale = 1.0 / math.sqrt(q.shape[-1])"] in found
    assert ["sm_scale = 1.0 / math.sqrt(q.shape[-2])"] not in found
    assert options(SCALE.replace("math.sqrt(q.shape[-2])", "8.0"), "shape_in_scale") == []


ATOMIC = module("""
    @triton.jit
    def sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            total = torch.empty(1, device=x.device, dtype=torch.float32)
            sum_kernel[(triton.cdiv(x.numel(), 256),)](x, total, x.numel(), BLOCK=256)
            return total
""")


def test_zero_accumulated_output_zeroes_only_the_atomic_target() -> None:
    assert options(ATOMIC, "zero_accumulated_output") == [
        ["total = torch.zeros(1, device=x.device, dtype=torch.float32)"]
    ]
    stored = ATOMIC.replace("tl.atomic_add(total_ptr, ", "tl.store(total_ptr, ")
    assert options(stored, "zero_accumulated_output") == []


GRID = module("""
    class ModelNew(torch.nn.Module):
        def forward(self, x, w):
            M, K = x.shape
            N = w.shape[0]
            grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(M, BLOCK_N))
            mm[grid](x, w, M, N, K)
""")


def test_grid_block_pair_tiles_each_axis_by_its_own_size() -> None:
    assert options(GRID, "grid_block_pair") == [["grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))"]]
    assert options(GRID.replace("cdiv(M, BLOCK_N)", "cdiv(N, BLOCK_N)"), "grid_block_pair") == []


TEMPERATURE = module("""
    class ModelNew(torch.nn.Module):
        def forward(self, x):
            scale = self.temperature
            softmax_kernel[(x.shape[0],)](x, scale)
""")


def test_reciprocal_scale_inverts_a_multiplicative_scale_both_ways() -> None:
    assert options(TEMPERATURE, "reciprocal_scale") == [["scale = 1.0 / self.temperature"]]
    inverted = TEMPERATURE.replace("scale = self.temperature", "scale = 1.0 / math.sqrt(x.shape[-1])")
    assert options(inverted, "reciprocal_scale") == [["scale = math.sqrt(x.shape[-1])"]]
    assert options(TEMPERATURE.replace("scale = ", "tau = "), "reciprocal_scale") == []


DEFAULTED = module("""
    def scaled(x, scale=1.0, shift=0.0):
        return x


    class ModelNew(torch.nn.Module):
        def __init__(self, scale, shift):
            super().__init__()
            self.scale = scale
            self._shift = shift

        def forward(self, x):
            return scaled(x, shift=self._shift)
""")


def test_the_models_kept_setting_reaches_a_wrapper_that_defaults_it() -> None:
    assert options(DEFAULTED, "pass_constructor_attribute") == [
        ["return scaled(x, shift=self._shift, scale=self.scale)"]
    ]
    passed = DEFAULTED.replace("scaled(x, shift", "scaled(x, self.scale, shift")
    assert options(passed, "pass_constructor_attribute") == []


@pytest.mark.parametrize("rule", [r.id for r in host_rules.RULES])
def test_every_host_rule_has_a_wrapper_it_applies_to(rule: str) -> None:
    contexts = [RuleContext.from_reference(IGNORING, {"reference_dtype": "int64"})]
    found = [
        rw
        for s in (
            *(ARGMAX, LOSS, CAPPED, ROWS, SCALE, ATOMIC, GRID, TEMPERATURE, DEFAULTED),
            *(SWAPPED_SETTINGS, SQUARE_PLANE),
        )
        for c in contexts
        for rw in propose(s, [rule], c)
    ]
    assert found
    for rw in found:
        compile(rw.source, "candidate.py", "exec")


SWAPPED_SETTINGS = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpby(x, y, out, n, alpha, beta, BLOCK: tl.constexpr):
    pass


def scaled_sum(x, y, alpha, beta):
    out = torch.empty_like(x)
    axpby[(1,)](x, y, out, x.numel(), alpha, beta, BLOCK=128)
    return out


class ModelNew(nn.Module):
    def __init__(self, alpha, beta):
        super().__init__()
        self.alpha, self.beta = alpha, beta

    def forward(self, x, y):
        return scaled_sum(x, y, self.beta, self.alpha)
'''


# The plane size of an NCHW tensor handed as H * H: the unpacked W is never used.
SQUARE_PLANE = module("""
    @triton.jit
    def per_channel(x, s, y, n, plane, C, BLOCK: tl.constexpr):
        pass


    def channel_scale(x, s):
        N, C, H, W = x.shape
        y = torch.empty_like(x)
        per_channel[(triton.cdiv(x.numel(), 256),)](x, s, y, x.numel(), H * H, C, BLOCK=256)
        return y
""")


def test_arguments_named_after_each_others_parameters_are_swapped() -> None:
    (rw,) = propose(SWAPPED_SETTINGS, ["args_named_for_another"])
    assert "return scaled_sum(x, y, self.alpha, self.beta)" in rw.source
    # Arguments in their own parameters' places (the launch) are left alone.
    assert propose(rw.source, ["args_named_for_another"]) == []


def test_arguments_named_after_each_others_parameters_by_a_short_form_are_swapped() -> None:
    # The launch hands `stride, padding` in the constructor's order to a kernel taking `pad, stride`.
    source = (
        SWAPPED_SETTINGS.replace("n, alpha, beta, BLOCK: tl", "n, pad, stride, BLOCK: tl")
        .replace("def scaled_sum(x, y, alpha, beta):", "def scaled_sum(x, y, stride, padding):")
        .replace("x.numel(), alpha, beta, BLOCK", "x.numel(), stride, padding, BLOCK")
        .replace("self.beta, self.alpha)", "self.stride, self.padding)")
    )
    (rw,) = propose(source, ["args_named_for_another"])
    assert "axpby[(1,)](x, y, out, x.numel(), padding, stride, BLOCK=128)" in rw.source
    assert propose(rw.source, ["args_named_for_another"]) == []
    # A name that only begins like another parameter's (two letters) stands for nothing.
    short = source.replace("pad, stride,", "st, pa,")
    assert propose(short, ["args_named_for_another"]) == []
