"""Convolution/pooling geometry rules on small kernels written here (never the benchmark corpus)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from difflib import SequenceMatcher

import pytest
import torch.nn.functional as F
from kernel_medic.tools.repair.rules import conv_layout, conv_sizes, conv_windows
from kernel_medic.tools.repair.rules.base import Rewrite, RuleContext
from kernel_medic.tools.repair.rules.registry import RULES, propose

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"


def kernel(body: str) -> str:
    return HEADER + textwrap.dedent(body).lstrip("\n")


def reference(call: str) -> RuleContext:
    return RuleContext.from_reference(
        textwrap.dedent(f"""
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.op = {call}

        def get_init_inputs():
            return []
        """)
    )


def changes(old: str, new: str) -> tuple[list[str], list[str]]:
    """(removed lines, added lines) over every changed hunk, stripped."""
    a, b = old.splitlines(), new.splitlines()
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += [line.strip() for line in a[i1:i2]]
            added += [line.strip() for line in b[j1:j2]]
    return removed, added


def by_rule(source: str, rule: str, context: RuleContext | None = None) -> list[Rewrite]:
    return propose(source, [rule], context)


# ---------------------------------------------------------------- kernels

CONV2D_WRAPPER = """
class ModelNew(nn.Module):
    def __init__(self, c_in, c_out, k):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c_out, c_in, k, k))
        self.stride = 2
        self.padding = 1

    def forward(self, x):
        B, C, H, W = x.shape
        K = self.weight.shape[2]
        OH = {oh}
        OW = {ow}
        return torch.empty((B, self.weight.shape[0], OH, OW), device=x.device)
"""

POOL_WRAPPER = """
class ModelNew(nn.Module):
    def forward(self, x):
        N, C, H, W = x.shape
        ks, st = 3, 2
        h_out = (H - ks) // st + 1
        w_out = (W - ks) // st + 1
        return torch.empty((N, C, h_out, w_out), device=x.device)
"""

CONV1D_KERNEL = """
@triton.jit
def conv1d(x_ptr, w_ptr, y_ptr, C_in, L, C_out, L_out,
           K: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, DIL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    b = row // C_out
    co = row % C_out
    pos = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for ci in range(0, C_in):
        for t in tl.static_range(K):
            src = {src}
            ok = (pos < L_out) & (src >= 0) & (src < L)
            xv = tl.load(x_ptr + (b * C_in + ci) * L + src, mask=ok, other=0.0)
            acc += xv * tl.load(w_ptr + (co * C_in + ci) * K + t)
    tl.store(y_ptr + row * L_out + pos, acc, mask=pos < L_out)


class ModelNew(nn.Module):
    def __init__(self, weight, stride, padding, dilation):
        super().__init__()
        self.weight, self.stride, self.padding, self.dilation = weight, stride, padding, dilation

    def forward(self, x):
        B, C_in, L = x.shape
        C_out, _, K = self.weight.shape
        L_out = (L + 2 * self.padding - self.dilation * (K - 1) - 1) // self.stride + 1
        y = torch.empty((B, C_out, L_out), dtype=x.dtype)
        conv1d[(B * C_out,)](x, self.weight, y, C_in, L, C_out, L_out, K=K, STRIDE=self.stride,
                             PAD=self.padding, DIL=self.dilation, BLOCK=triton.next_power_of_2(L_out))
        return y
"""

MAXPOOL2D_KERNEL = """
@triton.jit
def maxpool2d(x_ptr, y_ptr, H, W, OH, OW, KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
              BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    oh = offs // OW
    ow = offs % OW
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    for kh in tl.static_range(KS):
        for kw in tl.static_range(KS):
            ih = {ih}
            iw = {iw}
            inside = (offs < OH * OW) & {bounds}
            v = tl.load(x_ptr + plane * H * W + ih * W + iw, mask=inside, other=float("-inf"))
            best = tl.maximum(best, v)
    tl.store(y_ptr + plane * OH * OW + offs, best, mask=offs < OH * OW)
"""

GOOD_BOUNDS = "(ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)"

AVGPOOL_LOOP = """
@triton.jit
def avgpool2d(x_ptr, y_ptr, H, W, OH, OW, KH: tl.constexpr, KW: tl.constexpr, PAD: tl.constexpr,
              BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    oh = offs // OW
    ow = offs % OW
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(KH):
        for j in tl.static_range(KW):
            hh = oh - PAD + i
            ww = ow - PAD + j
            acc += tl.load(x_ptr + plane * H * W + hh * W + ww,
                           mask=(offs < OH * OW) & (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W), other=0.0)
    tl.store(y_ptr + plane * OH * OW + offs, acc / (KH * KW), mask=offs < OH * OW)
"""

AVGPOOL_WINDOW = """
@triton.jit
def avgpool1d(x_ptr, y_ptr, L, L_out, K: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
              BO: tl.constexpr, BW: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, BO)
    t = tl.arange(0, BW)
    idx = o[:, None] * STRIDE - PAD + t[None, :]
    valid = (o[:, None] < L_out) & (t[None, :] < K) & (idx >= 0) & (idx < L)
    win = tl.load(x_ptr + row * L + idx, mask=valid, other=0.0)
    tl.store(y_ptr + row * L_out + o, tl.sum(win, axis=1) / K, mask=o < L_out)
"""

CONV_BIAS = """
@triton.jit
def conv_rows(x_ptr, w_ptr, bias, y_ptr, C_out, L, K: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = pid // C_out
    c = pid % C_out
    pos = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in tl.static_range(K):
        acc += tl.load(x_ptr + n * L + pos + t, mask=pos + t < L, other=0.0) * tl.load(w_ptr + c * K + t)
    {bias_line}
    tl.store(y_ptr + {store} * L + pos, acc, mask=pos < L)
"""

STRIDES_LAUNCH = """
@triton.jit
def k3(x_ptr, y_ptr, sn, sc, sl, L, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        B, C, L = x.shape
        y = torch.empty_like(x)
        k3[(B * C,)](x, y, {strides}, L, BLOCK=64)
        return y
"""


# ---------------------------------------------------------------- conv_out_size


def test_output_size_twins_gain_padding_together() -> None:
    source = kernel(CONV2D_WRAPPER.format(oh="(H - K) // self.stride + 1", ow="(W - K) // self.stride + 1"))
    context = reference("nn.Conv2d(3, 4, 3, stride=2, padding=1)")
    rewrites = by_rule(source, "conv_out_size", context)
    assert rewrites
    removed, added = changes(source, rewrites[0].source)
    assert added == [
        "OH = (H + 2 * self.padding - K) // self.stride + 1",
        "OW = (W + 2 * self.padding - K) // self.stride + 1",
    ]
    assert len(removed) == 2


def test_output_size_missing_plus_one_and_dilation_from_the_reference() -> None:
    source = kernel(CONV2D_WRAPPER.format(oh="(H + 2 * self.padding - K) // self.stride", ow="W"))
    context = reference("nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=2)")
    added = [changes(source, r.source)[1] for r in by_rule(source, "conv_out_size", context)]
    assert ["OH = (H + 2 * self.padding - 2 * (K - 1) - 1) // self.stride + 1"] in added


def test_correct_output_sizes_are_left_alone() -> None:
    canonical = "(H + 2 * self.padding - 1 * (K - 1) - 1) // self.stride + 1"
    other_spelling = "(W - K + 2 * self.padding) // self.stride + 1"
    source = kernel(CONV2D_WRAPPER.format(oh=canonical, ow=other_spelling))
    assert by_rule(source, "conv_out_size", reference("nn.Conv2d(3, 4, 3, stride=2, padding=1)")) == []
    assert by_rule(source, "conv_out_size", RuleContext()) == []


def test_a_hostile_size_formula_is_never_evaluated_by_python() -> None:
    # The formula is candidate code: a huge power must neither hang the agent nor be run by eval.
    source = kernel(CONV2D_WRAPPER.format(oh="(H ** 99999999999) // self.stride", ow="W"))
    context = reference("nn.Conv2d(3, 4, 3, stride=2, padding=1)")
    rewrites = by_rule(source, "conv_out_size", context)
    assert all(
        "99999999999" not in changes(source, r.source)[1][0] for r in rewrites if changes(source, r.source)[1]
    )


def test_ceil_mode_rounds_up_on_both_axes() -> None:
    source = kernel(POOL_WRAPPER)
    rewrites = by_rule(source, "conv_out_size", reference("nn.MaxPool2d(3, stride=2, ceil_mode=True)"))
    assert rewrites
    _, added = changes(source, rewrites[0].source)
    assert added == ["h_out = (H - ks + st - 1) // st + 1", "w_out = (W - ks + st - 1) // st + 1"]
    # floor mode: the wrapper is already right
    assert by_rule(source, "conv_out_size", reference("nn.MaxPool2d(3, stride=2)")) == []


def ceil_sizes(k: int, s: int, p: int) -> tuple[str, list[Rewrite]]:
    source = kernel(
        POOL_WRAPPER.replace("ks, st = 3, 2", f"ks, st, pad = {k}, {s}, {p}").replace(
            "- ks)", "+ 2 * pad - ks)"
        )
    )
    return source, by_rule(source, "conv_out_size", reference(f"nn.MaxPool2d({k}, {s}, {p}, ceil_mode=True)"))


def test_ceil_mode_matches_pytorch() -> None:
    import torch

    source, rewrites = ceil_sizes(3, 2, 1)
    assert rewrites
    formula = changes(source, rewrites[0].source)[1][0].split(" = ", 1)[1]
    sizes = range(5, 30)
    want = [F.max_pool1d(torch.zeros(1, 1, h), 3, 2, 1, ceil_mode=True).shape[-1] for h in sizes]
    assert [eval(formula, {}, {"H": h, "ks": 3, "st": 2, "pad": 1}) for h in sizes] == want  # noqa: S307


def test_floor_that_equals_pytorchs_ceil_mode_is_left_alone() -> None:
    # stride 3 > kernel 2: PyTorch drops the window that would start in the padding, so floor is already right
    assert ceil_sizes(2, 3, 1)[1] == []


# ---------------------------------------------------------------- conv_input_coords


@pytest.mark.parametrize(
    ("broken", "fixed"),
    [
        ("pos * STRIDE + t * DIL", "pos * STRIDE - PAD + t * DIL"),
        ("pos * STRIDE - PAD + t", "pos * STRIDE - PAD + t * DIL"),
        ("pos - PAD + t * DIL", "pos * STRIDE - PAD + t * DIL"),
        ("pos * STRIDE + PAD + t * DIL", "pos * STRIDE - PAD + t * DIL"),
    ],
)
def test_conv1d_input_coordinate(broken: str, fixed: str) -> None:
    source = kernel(CONV1D_KERNEL.format(src=broken))
    added = [changes(source, r.source)[1] for r in by_rule(source, "conv_input_coords")]
    assert [f"src = {fixed}"] in added


def test_pool_twins_get_the_padding_together() -> None:
    source = kernel(MAXPOOL2D_KERNEL.format(ih="oh * STRIDE + kh", iw="ow * STRIDE + kw", bounds=GOOD_BOUNDS))
    rewrites = by_rule(source, "conv_input_coords")
    assert len(rewrites) == 1
    assert changes(source, rewrites[0].source)[1] == [
        "ih = oh * STRIDE - PAD + kh",
        "iw = ow * STRIDE - PAD + kw",
    ]


def test_window_origin_steps_by_the_stride_not_the_kernel() -> None:
    source = kernel(
        MAXPOOL2D_KERNEL.format(ih="oh * KS - PAD + kh", iw="ow * KS - PAD + kw", bounds=GOOD_BOUNDS)
    )
    rewrites = by_rule(source, "conv_input_coords")
    assert len(rewrites) == 1
    assert changes(source, rewrites[0].source)[1] == [
        "ih = oh * STRIDE - PAD + kh",
        "iw = ow * STRIDE - PAD + kw",
    ]


def test_correct_coordinates_are_left_alone() -> None:
    assert (
        by_rule(kernel(CONV1D_KERNEL.format(src="pos * STRIDE - PAD + t * DIL")), "conv_input_coords") == []
    )
    pool = kernel(
        MAXPOOL2D_KERNEL.format(ih="oh * STRIDE - PAD + kh", iw="ow * STRIDE - PAD + kw", bounds=GOOD_BOUNDS)
    )
    assert by_rule(pool, "conv_input_coords") == []
    # origin and tap on separate lines: PAD is used once, on the origin
    split = pool.replace("ih = oh * STRIDE - PAD + kh", "h0 = oh * STRIDE - PAD\n            ih = h0 + kh")
    split = split.replace("iw = ow * STRIDE - PAD + kw", "w0 = ow * STRIDE - PAD\n            iw = w0 + kw")
    assert by_rule(split, "conv_input_coords") == []


def test_fixed_conv1d_runs_like_torch() -> None:
    source = kernel(CONV1D_KERNEL.format(src="pos * STRIDE + t * DIL"))
    fixed = next(r for r in by_rule(source, "conv_input_coords") if "- PAD" in r.source).source
    script = fixed + textwrap.dedent("""
        import torch.nn.functional as F
        torch.manual_seed(0)
        x, w = torch.randn(2, 3, 19), torch.randn(4, 3, 3)
        y = ModelNew(w, 2, 2, 2)(x)
        ref = F.conv1d(x, w, stride=2, padding=2, dilation=2)
        assert y.shape == ref.shape and torch.allclose(y, ref, atol=1e-4), (y - ref).abs().max()
    """)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]


# ---------------------------------------------------------------- pad_upper_bound


def test_missing_upper_bounds_are_added_on_both_axes() -> None:
    broken = "(ih >= 0) & (iw >= 0)"
    source = kernel(
        MAXPOOL2D_KERNEL.format(ih="oh * STRIDE - PAD + kh", iw="ow * STRIDE - PAD + kw", bounds=broken)
    )
    rewrites = by_rule(source, "pad_upper_bound")
    assert rewrites
    _, added = changes(source, rewrites[0].source)
    assert added == ["inside = (offs < OH * OW) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)"]


def test_conv1d_right_edge_bound() -> None:
    source = kernel(CONV1D_KERNEL.format(src="pos * STRIDE - PAD + t * DIL")).replace(
        "(src >= 0) & (src < L)", "(src >= 0)"
    )
    rewrites = by_rule(source, "pad_upper_bound")
    assert changes(source, rewrites[0].source)[1] == ["ok = (pos < L_out) & (src >= 0) & (src < L)"]
    assert all("x_ptr" not in r.description for r in rewrites)


def test_bounded_masks_are_left_alone() -> None:
    source = kernel(
        MAXPOOL2D_KERNEL.format(ih="oh * STRIDE - PAD + kh", iw="ow * STRIDE - PAD + kw", bounds=GOOD_BOUNDS)
    )
    assert by_rule(source, "pad_upper_bound") == []


# ---------------------------------------------------------------- avg_pool_valid_count

EXCLUDE_PAD = reference("nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)")


def test_loop_average_counts_the_valid_taps() -> None:
    source = kernel(AVGPOOL_LOOP)
    rewrites = by_rule(source, "avg_pool_valid_count", EXCLUDE_PAD)
    assert len(rewrites) == 1
    new = rewrites[0].source
    assert "    count = tl.zeros([BLOCK], dtype=tl.float32)\n" in new
    counted = "((offs < OH * OW) & (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)).to(tl.float32)"
    assert f"            count += {counted}\n" in new
    assert "acc / tl.maximum(count, 1.0)" in new
    compile(new, "fixed", "exec")


def test_window_average_counts_the_valid_taps() -> None:
    source = kernel(AVGPOOL_WINDOW)
    context = reference("nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False)")
    rewrites = by_rule(source, "avg_pool_valid_count", context)
    assert len(rewrites) == 1
    assert "tl.sum(win, axis=1) / tl.maximum(tl.sum(valid.to(tl.float32), axis=1), 1.0)" in rewrites[0].source


CLIPPED_DIVISOR = AVGPOOL_LOOP.replace(
    "    acc = tl.zeros([BLOCK], dtype=tl.float32)\n",
    "    h0 = tl.maximum(oh - PAD, -PAD)\n    h1 = tl.minimum(oh - PAD + KH, H + PAD)\n"
    "    size = (h1 - h0) * KW\n    acc = tl.zeros([BLOCK], dtype=tl.float32)\n",
).replace(
    "            acc += tl.load(",
    "            v = tl.load(",
).replace(
    "other=0.0)\n",
    "other=0.0)\n            acc += v.to(tl.float32)\n",
).replace("acc / (KH * KW)", "acc / size.to(tl.float32)")


def test_a_divisor_from_a_window_clipped_to_the_padded_extent_becomes_the_count_of_taps() -> None:
    # The reference excludes the pad: whatever the kernel divides by, the taps inside the input are the count.
    source = kernel(CLIPPED_DIVISOR)
    (rewrite,) = by_rule(source, "avg_pool_valid_count", EXCLUDE_PAD)
    assert "            count += ((offs < OH * OW) & (hh >= 0)" in rewrite.source
    assert "acc / tl.maximum(count, 1.0)" in rewrite.source
    # Without the reference's word only a plain window area is suspect.
    assert by_rule(source, "avg_pool_valid_count", None) == []


def test_count_include_pad_true_keeps_the_window_area() -> None:
    assert (
        by_rule(kernel(AVGPOOL_LOOP), "avg_pool_valid_count", reference("nn.AvgPool2d(3, padding=1)")) == []
    )
    assert (
        by_rule(kernel(AVGPOOL_LOOP), "avg_pool_valid_count", reference("nn.MaxPool2d(3, padding=1)")) == []
    )


def test_ceil_mode_without_padding_divides_by_the_clipped_window() -> None:
    # torch clips ceil_mode's last window to the input and divides by what is left: the taps inside.
    ceil = reference("nn.AvgPool2d(3, stride=2, ceil_mode=True)")
    found = by_rule(kernel(AVGPOOL_LOOP), "avg_pool_valid_count", ceil)
    assert len(found) == 1 and "ceil_mode" in found[0].description
    padded = reference("nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)")  # the divisor counts the pad
    assert by_rule(kernel(AVGPOOL_LOOP), "avg_pool_valid_count", padded) == []


def test_valid_count_average_runs_like_torch() -> None:
    fixed = by_rule(kernel(AVGPOOL_LOOP), "avg_pool_valid_count", EXCLUDE_PAD)[0].source
    script = fixed + textwrap.dedent("""
        import torch.nn.functional as F
        torch.manual_seed(0)
        x = torch.randn(2, 3, 7, 6)
        y = torch.empty(2, 3, 7, 6)
        avgpool2d[(6,)](x, y, 7, 6, 7, 6, KH=3, KW=3, PAD=1, BLOCK=64)
        ref = F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
        assert torch.allclose(y, ref, atol=1e-5), (y - ref).abs().max()
    """)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]


# ---------------------------------------------------------------- bias_never_added, store_batch_index


def test_unread_bias_is_added_before_the_store() -> None:
    source = kernel(CONV_BIAS.format(bias_line="pass", store="pid"))
    added = [changes(source, r.source)[1] for r in by_rule(source, "bias_never_added")]
    assert ["acc += tl.load(bias + c)"] in added


def test_read_bias_is_left_alone() -> None:
    source = kernel(CONV_BIAS.format(bias_line="acc += tl.load(bias + c)", store="pid"))
    assert by_rule(source, "bias_never_added") == []


def test_store_indexes_the_batch() -> None:
    source = kernel(CONV_BIAS.format(bias_line="acc += tl.load(bias + c)", store="c"))
    added = [changes(source, r.source)[1] for r in by_rule(source, "store_batch_index")]
    assert ["tl.store(y_ptr + pid * L + pos, acc, mask=pos < L)"] in added
    assert ["tl.store(y_ptr + (n * C_out + c) * L + pos, acc, mask=pos < L)"] in added
    assert by_rule(kernel(CONV_BIAS.format(bias_line="pass", store="pid")), "store_batch_index") == []


# ---------------------------------------------------------------- launch_strides_from_shape


def test_contiguous_strides_become_the_tensors() -> None:
    source = kernel(STRIDES_LAUNCH.format(strides="C * L, L, 1"))
    rewrites = by_rule(source, "launch_strides_from_shape")
    assert len(rewrites) == 1
    assert changes(source, rewrites[0].source)[1] == [
        "k3[(B * C,)](x, y, x.stride(0), x.stride(1), x.stride(2), L, BLOCK=64)"
    ]


def test_real_strides_are_left_alone() -> None:
    source = kernel(STRIDES_LAUNCH.format(strides="x.stride(0), x.stride(1), x.stride(2)"))
    assert by_rule(source, "launch_strides_from_shape") == []


# ---------------------------------------------------------------- registry

ZERO_PADDED_CONV2D = """
    @triton.jit
    def conv(x_ptr, w_ptr, y_ptr, H, W, PAD: tl.constexpr, KS: tl.constexpr, BLOCK: tl.constexpr):
        oh = tl.program_id(0)
        ow = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for kh in tl.static_range(KS):
            for kw in tl.static_range(KS):
                ih = oh + kh - PAD
                iw = ow + kw - PAD
                ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                acc += tl.load(x_ptr + ih * W + iw, mask=ok, other=0.0) * tl.load(w_ptr + kh * KS + kw)
        tl.store(y_ptr + oh * W + ow, acc, mask=ow < W)
"""


def test_padding_mode_brings_coordinates_into_range_as_the_reference_pads() -> None:
    source = kernel(ZERO_PADDED_CONV2D)
    assert by_rule(source, "padding_mode", reference("nn.Conv2d(1, 1, 3, padding=1)")) == []
    expected = {
        "circular": ["ih = ((oh + kh - PAD) % H + H) % H", "iw = ((ow + kw - PAD) % W + W) % W"],
        "replicate": ["ih = tl.minimum(tl.maximum(oh + kh - PAD, 0), H - 1)"],
        "reflect": ["iw = tl.where((ow + kw - PAD) < 0, -(ow + kw - PAD), tl.where((ow + kw - PAD) >= W, "],
    }
    for mode, lines in expected.items():
        context = reference(f"nn.Conv2d(1, 1, 3, padding=1, padding_mode='{mode}')")
        both, *alone = by_rule(source, "padding_mode", context)
        assert all(line in both.source for line in lines), (mode, both.source)
        assert len(alone) == 2  # each coordinate alone too


AREA_AVGPOOL = """
    @triton.jit
    def avg(
        x_ptr, y_ptr, H, W, OW, KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, B: tl.constexpr
    ):
        oh = tl.program_id(0)
        ow = tl.arange(0, B)
        h0 = oh * STRIDE - PAD
        w0 = ow * STRIDE - PAD
        acc = tl.zeros((B,), dtype=tl.float32)
        for kh in range(KS):
            ih = h0 + kh
            for kw in range(0, KS):
                iw = w0 + kw
                ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                acc += tl.load(x_ptr + ih * W + iw, mask=ok, other=0.0)
        tl.store(y_ptr + oh * OW + ow, acc / (KS * KS), mask=ow < OW)
"""
CEIL_POOL = reference("nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)")


def test_a_ceil_mode_average_divides_each_window_by_its_part_within_the_padded_input() -> None:
    source = kernel(AREA_AVGPOOL)
    (rw,) = by_rule(source, "ceil_window_divisor", CEIL_POOL)
    assert "acc / ((tl.minimum(h0 + KS, H + PAD) - h0) * (tl.minimum(w0 + KS, W + PAD) - w0))" in rw.source
    assert by_rule(rw.source, "ceil_window_divisor", CEIL_POOL) == []
    assert by_rule(source, "ceil_window_divisor", reference("nn.AvgPool2d(3, stride=2, padding=1)")) == []
    excluded = reference("nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)")
    assert by_rule(source, "ceil_window_divisor", excluded) == []


APPLIES = {
    "conv_out_size": (
        CONV2D_WRAPPER.format(oh="(H - K) // self.stride + 1", ow="(W - K) // self.stride + 1"),
        reference("nn.Conv2d(3, 4, 3, stride=2, padding=1)"),
    ),
    "conv_input_coords": (CONV1D_KERNEL.format(src="pos * STRIDE + t * DIL"), None),
    "pad_upper_bound": (
        MAXPOOL2D_KERNEL.format(
            ih="oh * STRIDE - PAD + kh", iw="ow * STRIDE - PAD + kw", bounds="(ih >= 0) & (iw >= 0)"
        ),
        None,
    ),
    "avg_pool_valid_count": (AVGPOOL_LOOP, EXCLUDE_PAD),
    "bias_never_added": (CONV_BIAS.format(bias_line="pass", store="pid"), None),
    "store_batch_index": (CONV_BIAS.format(bias_line="pass", store="c"), None),
    "launch_strides_from_shape": (STRIDES_LAUNCH.format(strides="C * L, L, 1"), None),
    "ceil_window_divisor": (AREA_AVGPOOL, CEIL_POOL),
    "padding_mode": (ZERO_PADDED_CONV2D, reference("nn.Conv2d(1, 1, 3, padding=1, padding_mode='circular')")),
}


def test_every_geometry_rule_has_a_kernel_it_applies_to() -> None:
    ids = [rule.id for family in (conv_sizes, conv_windows, conv_layout) for rule in family.RULES]
    assert sorted(ids) == sorted(APPLIES)
    for rule_id in ids:
        assert RULES[rule_id].apply is not None
        source, context = APPLIES[rule_id]
        rewrites = by_rule(kernel(source), rule_id, context)
        assert rewrites, rule_id
        for rewrite in rewrites:
            compile(rewrite.source, rule_id, "exec")
            assert rewrite.rule == rule_id
