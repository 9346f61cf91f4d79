"""Index and mask rules: each applies where its bug is and leaves correct kernels alone."""

from __future__ import annotations

import textwrap

import pytest
from kernel_medic.tools.repair.rules import index as index_rules
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.rules.registry import propose

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


def kernel(body: str) -> str:
    return HEADER + textwrap.dedent(body).lstrip("\n")


def changed_lines(old: str, new: str) -> list[str]:
    a, b = old.splitlines(), new.splitlines()
    assert len(a) == len(b)
    return [y for x, y in zip(a, b) if x != y]


def options(source: str, rule: str, context: RuleContext | None = None) -> list[list[str]]:
    return [changed_lines(source, r.source) for r in propose(source, [rule], context)]


CHANNEL_BIAS = kernel("""
    @triton.jit
    def bias_kernel(x_ptr, b_ptr, out_ptr, n_elements, C, HW, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_elements
        ch = offs % C
        b = tl.load(b_ptr + ch, mask=mask)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + b, mask=mask)
""")


def test_flat_channel_index_divides_by_the_inner_extent() -> None:
    assert options(CHANNEL_BIAS, "flat_channel_index") == [["    ch = (offs // HW) % C"]]


def test_flat_channel_index_leaves_a_modulo_that_is_not_a_broadcast_index() -> None:
    source = CHANNEL_BIAS.replace("b = tl.load(b_ptr + ch, mask=mask)", "b = ch * 2.0")
    assert options(source, "flat_channel_index") == []


ROW_TILE = kernel("""
    @triton.jit
    def tile_kernel(x_ptr, out_ptr, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        mask = cols[None, :] < N
        x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask)
        tl.store(out_ptr + rows[:, None] * stride + cols[None, :], x * 2.0, mask=mask)
""")


def test_mask_missing_axis_adds_the_row_bound() -> None:
    found = options(ROW_TILE, "mask_missing_axis")
    assert ["    mask = (cols[None, :] < N) & (rows[:, None] < M)"] in found
    # Only the other axis' offsets are bounded, by the kernel's runtime sizes (never a stride or a block).
    assert all("stride" not in line and "BLOCK" not in line for change in found for line in change)


def test_mask_missing_axis_leaves_a_mask_bounding_both_axes() -> None:
    source = ROW_TILE.replace("mask = cols[None, :] < N", "mask = (rows[:, None] < M) & (cols[None, :] < N)")
    assert options(source, "mask_missing_axis") == []


PAD_WINDOW = kernel("""
    @triton.jit
    def conv1d_kernel(x_ptr, w_ptr, y_ptr, L, PAD: tl.constexpr, K: tl.constexpr, BLOCK: tl.constexpr):
        pos = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for k in range(K):
            src = pos - PAD + k
            valid = (pos < L) & (src >= 0)
            acc += tl.load(x_ptr + src, mask=valid, other=0.0) * tl.load(w_ptr + k)
        tl.store(y_ptr + pos, acc, mask=pos < L)
""")


def test_upper_bound_adds_the_far_edge() -> None:
    assert ["        valid = (pos < L) & ((src >= 0) & (src < L))"] in options(PAD_WINDOW, "upper_bound")


def test_upper_bound_leaves_an_index_bounded_on_both_sides() -> None:
    source = PAD_WINDOW.replace("(src >= 0)", "(src >= 0) & (src < L)")
    assert options(source, "upper_bound") == []


ROWS_BY_BLOCK = kernel("""
    @triton.jit
    def row_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * BLOCK_SIZE + cols, mask=mask)
        tl.store(out_ptr + row * BLOCK_SIZE + cols, x + 1.0, mask=mask)
""")


def test_row_times_block_uses_the_row_length() -> None:
    found = options(ROWS_BY_BLOCK, "row_times_block")
    assert ["    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)"] in found
    assert ["    tl.store(out_ptr + row * n_cols + cols, x + 1.0, mask=mask)"] in found


def test_row_times_block_leaves_a_flat_block_kernel_alone() -> None:
    flat = kernel("""
        @triton.jit
        def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)
    """)
    assert options(flat, "row_times_block") == []


GROUPED = kernel("""
    @triton.jit
    def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        pid = tl.program_id(0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        pid_m = pid // num_pid_m
        pid_n = pid % num_pid_m
        tl.store(c_ptr + pid_m * N + pid_n, 0.0)
""")


def test_pid_decomposition_changes_both_halves_together() -> None:
    found = options(GROUPED, "pid_decomposition")
    assert ["    pid_m = pid // num_pid_n", "    pid_n = pid % num_pid_n"] in found
    # The quotient and remainder swapped: (pid_m, pid_n) = (pid % A, pid // A).
    assert ["    pid_m = pid % num_pid_n", "    pid_n = pid // num_pid_n"] in found
    assert ["    pid_m = pid // N", "    pid_n = pid % N"] in found  # runtime sizes too
    assert all(len(change) == 2 for change in found)


def test_pid_decomposition_needs_a_div_mod_pair() -> None:
    source = GROUPED.replace("pid_n = pid % num_pid_m", "pid_n = pid % num_pid_n")
    assert options(source, "pid_decomposition") == []


GATHER = kernel("""
    @triton.jit
    def gather_kernel(x_ptr, idx_ptr, out_ptr, x_stride0, idx_stride0, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        idx = tl.load(idx_ptr + row * idx_stride0 + cols, mask=cols < n, other=0)
        vals = tl.load(x_ptr + row * idx_stride0 + idx, mask=cols < n, other=0.0)
        tl.store(out_ptr + row * n + cols, vals, mask=cols < n)
""")


def test_stride_owner_gives_each_pointer_its_own_stride() -> None:
    assert options(GATHER, "stride_owner") == [
        ["    vals = tl.load(x_ptr + row * x_stride0 + idx, mask=cols < n, other=0.0)"]
    ]


def test_stride_owner_reads_tensor_letter_stride_names() -> None:
    source = kernel("""
        @triton.jit
        def bmm_kernel(a_ptr, b_ptr, c_ptr, stride_ab, stride_bb, stride_bk, n, BLOCK: tl.constexpr):
            batch = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            b_ptrs = b_ptr + batch * stride_ab + offs * stride_bk
            a = tl.load(a_ptr + batch * stride_ab + offs, mask=offs < n)
            tl.store(c_ptr + batch * n + offs, a * tl.load(b_ptrs, mask=offs < n), mask=offs < n)
    """)
    assert options(source, "stride_owner") == [["    b_ptrs = b_ptr + batch * stride_bb + offs * stride_bk"]]


def test_stride_owner_leaves_matching_strides_alone() -> None:
    source = GATHER.replace("load(x_ptr + row * idx_stride0", "load(x_ptr + row * x_stride0")
    assert options(source, "stride_owner") == []


CUMPROD = kernel("""
    @triton.jit
    def cumprod_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
        y = tl.exp(tl.cumsum(tl.log(x), axis=0))
        tl.store(y_ptr + offs, y, mask=offs < n)
""")


def test_log_space_product_becomes_cumprod() -> None:
    assert options(CUMPROD, "log_space_product") == [["    y = tl.cumprod(x, axis=0)"]]


def test_log_space_product_leaves_a_plain_cumsum() -> None:
    assert (
        options(
            CUMPROD.replace("tl.exp(tl.cumsum(tl.log(x), axis=0))", "tl.cumsum(x, axis=0)"),
            "log_space_product",
        )
        == []
    )


HALF_SCAN = kernel("""
    @triton.jit
    def cumsum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(n):
            v = tl.load(x_ptr + offs * n + i)
            acc = acc + v.to(tl.float32)
            tl.store(out_ptr + offs * n + i, acc.to(tl.float16))
""")
HALF_REFERENCE = "import torch\n\ndef get_inputs():\n    return [torch.randn(4, 8).half()]\n"


def test_half_rounding_accumulates_like_a_half_reference() -> None:
    found = options(HALF_SCAN, "half_rounding", RuleContext.from_reference(HALF_REFERENCE))
    assert found == [["    acc = tl.zeros([BLOCK], dtype=tl.float16)", "        acc = acc + v"]]


def test_half_rounding_needs_a_half_reference() -> None:
    fp32 = RuleContext.from_reference(HALF_REFERENCE.replace(".half()", ""))
    assert options(HALF_SCAN, "half_rounding", fp32) == []


LINEAR = kernel("""
    @triton.jit
    def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, 16)
        x = tl.load(x_ptr + offs_m[:, None] * K + offs_k[None, :])
        w = tl.load(w_ptr + offs_k[:, None] * N + offs_n[None, :])
        acc = tl.dot(x, w)
        bias = tl.load(b_ptr + offs_m, mask=offs_m < M, other=0.0)
        acc = acc + bias[:, None]
        y_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=y_mask)
""")


def test_bias_axis_swap_moves_load_and_broadcast_to_the_other_axis() -> None:
    # offs_k is broadcast both ways, so it is no output axis: only offs_n is offered.
    assert options(LINEAR, "bias_axis_swap") == [
        ["    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)", "    acc = acc + bias[None, :]"]
    ]


def test_bias_axis_swap_needs_a_broadcast_bias() -> None:
    assert options(LINEAR.replace("acc = acc + bias[:, None]", "acc = acc + 1.0"), "bias_axis_swap") == []


GROUP_NORM = kernel("""
    @triton.jit
    def gn_kernel(x_ptr, y_ptr, weight_ptr, bias_ptr, n, HW, C_PER_G, G, eps, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        grp = pid % G
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + pid * n + offs, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / n
        xc = tl.where(mask, x - mean, 0.0)
        y = xc / tl.sqrt(tl.sum(xc * xc, axis=0) / n + eps)
        tl.store(y_ptr + pid * n + offs, y, mask=mask)
""")
GROUP_NORM_REFERENCE = "import torch.nn as nn\nnorm = nn.GroupNorm(4, 16)\n"


def test_affine_channel_offers_the_group_channel_index() -> None:
    found = options(GROUP_NORM, "affine_channel", RuleContext.from_reference(GROUP_NORM_REFERENCE))
    expected = (
        "    tl.store(y_ptr + pid * n + offs, y * tl.load(weight_ptr + grp * C_PER_G + offs // HW, "
        "mask=mask, other=1.0) + tl.load(bias_ptr + grp * C_PER_G + offs // HW, mask=mask, other=0.0), "
        "mask=mask)"
    )
    assert [expected] in found
    assert len(found) <= 24  # a handful to screen, not every expression over the kernel's names


def test_affine_channel_needs_a_channel_norm_and_an_unused_affine() -> None:
    layer_norm = RuleContext.from_reference("import torch.nn as nn\nnorm = nn.LayerNorm(16)\n")
    assert options(GROUP_NORM, "affine_channel", layer_norm) == []
    applied = GROUP_NORM.replace("y, mask=mask)", "y * tl.load(weight_ptr) + tl.load(bias_ptr), mask=mask)")
    assert options(applied, "affine_channel", RuleContext.from_reference(GROUP_NORM_REFERENCE)) == []


CONV_FLIPPED = kernel("""
    @triton.jit
    def dw_kernel(x_ptr, w_ptr, y_ptr, H, W, KS: tl.constexpr, BLOCK: tl.constexpr):
        c = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for kh in range(KS):
            for kw in range(KS):
                wv = tl.load(w_ptr + c * KS * KS + (KS - 1 - kh) * KS + (KS - 1 - kw))
                acc += tl.load(x_ptr + offs + kh * W + kw, mask=offs < H * W, other=0.0) * wv
        tl.store(y_ptr + c * H * W + offs, acc, mask=offs < H * W)
""")

GROUP_NORM_CH = GROUP_NORM.replace(
    "tl.store(y_ptr + pid * n + offs, y, mask=mask)",
    "ch = offs // HW\n    tl.store(y_ptr + pid * n + offs, y * tl.load(weight_ptr + ch), mask=mask)",
)
ROW_TILE_SAME = ROW_TILE.replace(
    "mask = cols[None, :] < N", "mask = (rows[:, None] < N) & (cols[None, :] < N)"
)


def test_unflip_taps_reads_the_filter_as_cross_correlation() -> None:
    assert options(CONV_FLIPPED, "unflip_taps") == [
        ["            wv = tl.load(w_ptr + c * KS * KS + kh * KS + kw)"]
    ]
    # An input read `K - 1 - k` away is not a filter: left alone.
    source = CONV_FLIPPED.replace("(KS - 1 - kh) * KS + (KS - 1 - kw))", "kh * KS + kw)").replace(
        "x_ptr + offs + kh * W + kw", "x_ptr + offs + (KS - 1 - kh) * W + kw"
    )
    assert options(source, "unflip_taps") == []


def test_mask_axis_bound_gives_each_axis_its_own_size() -> None:
    source = ROW_TILE.replace("mask = cols[None, :] < N", "mask = (rows[:, None] < N) & (cols[None, :] < N)")
    found = options(source, "mask_axis_bound")
    assert ["    mask = (rows[:, None] < M) & (cols[None, :] < N)"] in found
    assert (
        options(
            ROW_TILE.replace("mask = cols[None, :] < N", "mask = (rows[:, None] < M) & (cols[None, :] < N)"),
            "mask_axis_bound",
        )
        == []
    )


def test_channel_group_offset_adds_the_groups_first_channel() -> None:
    source = GROUP_NORM_CH
    found = options(source, "channel_group_offset", RuleContext.from_reference(GROUP_NORM_REFERENCE))
    assert ["    ch = grp * C_PER_G + offs // HW"] in found
    assert options(source, "channel_group_offset", RuleContext.from_reference("nn.LayerNorm(8)")) == []


@pytest.mark.parametrize("rule", [r.id for r in index_rules.RULES])
def test_every_index_rule_has_a_kernel_it_applies_to(rule: str) -> None:
    examples = [
        CHANNEL_BIAS,
        LINEAR,
        ROW_TILE,
        PAD_WINDOW,
        ROWS_BY_BLOCK,
        GROUPED,
        GATHER,
        CUMPROD,
        HALF_SCAN,
        GROUP_NORM,
        GROUP_NORM_CH,
        CONV_FLIPPED,
        ROW_TILE_SAME,
    ]
    contexts = [RuleContext.from_reference(HALF_REFERENCE), RuleContext.from_reference(GROUP_NORM_REFERENCE)]
    found = [rw for source in examples for context in contexts for rw in propose(source, [rule], context)]
    assert found
    for rw in found:
        compile(rw.source, "candidate.py", "exec")


def test_flat_channel_index_wraps_a_plane_index_at_the_channel_count() -> None:
    # `offs // HW` counts the (batch, channel) planes: every sample after the first reads past C.
    source = CHANNEL_BIAS.replace("ch = offs % C", "ch = offs // HW")
    assert ["    ch = (offs // HW) % C"] in options(source, "flat_channel_index")
    assert ["    ch = (offs // HW) % n_elements"] not in options(source, "flat_channel_index")
