"""Reduction rules: each applies where its bug is and leaves correct kernels alone."""

from __future__ import annotations

import difflib
import textwrap

import pytest
from kernel_medic.tools.repair.rules import normalisation
from kernel_medic.tools.repair.rules import reduction as reduction_rules
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.rules.registry import propose

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


def kernel(body: str) -> str:
    return HEADER + textwrap.dedent(body).lstrip("\n")


def diff(old: str, new: str) -> tuple[list[str], list[str]]:
    """(removed lines, added lines) from `old` to `new`."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0))[2:]
    removed = [x[1:] for x in lines if x.startswith("-")]
    added = [x[1:] for x in lines if x.startswith("+")]
    return removed, added


def options(source: str, rule: str, context: RuleContext | None = None) -> list[tuple[list[str], list[str]]]:
    found = propose(source, [rule], context)
    for rw in found:
        compile(rw.source, "candidate.py", "exec")
    return [diff(source, rw.source) for rw in found]


def ref(text: str) -> RuleContext:
    return RuleContext.from_reference(textwrap.dedent(text))


# ---------------------------------------------------------------- logsumexp_shift

LSE_INLINE = kernel("""
    @triton.jit
    def lse_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * n + offs, mask=offs < n, other=float("-inf"))
        tl.store(out_ptr + row, tl.log(tl.sum(tl.exp(v), axis=0)))
""")


def test_logsumexp_shift_inline() -> None:
    assert options(LSE_INLINE, "logsumexp_shift") == [
        (
            ["    tl.store(out_ptr + row, tl.log(tl.sum(tl.exp(v), axis=0)))"],
            [
                "    v_max = tl.max(v, axis=0)",
                "    tl.store(out_ptr + row, v_max + tl.log(tl.sum(tl.exp(v - v_max), axis=0)))",
            ],
        )
    ]


LSE_SPLIT = kernel("""
    @triton.jit
    def lse_rows(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.arange(0, BN)
        z = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=cols[None, :] < N, other=float("-inf"))
        e = tl.exp(z)
        total = tl.sum(e, axis=1)
        tl.store(out_ptr + rows, tl.log(total) / N, mask=rows < M)
""")


def test_logsumexp_shift_across_assignments_keeps_precedence() -> None:
    assert options(LSE_SPLIT, "logsumexp_shift") == [
        (
            ["    e = tl.exp(z)", "    tl.store(out_ptr + rows, tl.log(total) / N, mask=rows < M)"],
            [
                "    z_max = tl.max(z, axis=1)",
                "    e = tl.exp(z - z_max[:, None])",
                "    tl.store(out_ptr + rows, (z_max + tl.log(total)) / N, mask=rows < M)",
            ],
        )
    ]


LSE_LOOP = kernel("""
    @triton.jit
    def lse_long(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        acc = 0.0
        for start in range(0, n, BLOCK):
            cols = start + offs
            x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=float("-inf"))
            acc += tl.sum(tl.exp(x), axis=0)
        tl.store(out_ptr + row, tl.log(acc))
""")


def test_logsumexp_shift_online_form_keeps_a_running_max() -> None:
    assert options(LSE_LOOP, "logsumexp_shift") == [
        (
            ["        acc += tl.sum(tl.exp(x), axis=0)", "    tl.store(out_ptr + row, tl.log(acc))"],
            [
                '    acc_max = float("-inf")',
                "        acc_max_new = tl.maximum(acc_max, tl.max(x, axis=0))",
                "        acc = acc * tl.exp(acc_max - acc_max_new) + tl.sum(tl.exp(x - acc_max_new), axis=0)",
                "        acc_max = acc_max_new",
                "    tl.store(out_ptr + row, acc_max + tl.log(acc))",
            ],
        )
    ]


def test_logsumexp_shift_leaves_shifted_and_non_log_kernels_alone() -> None:
    shifted = LSE_INLINE.replace(
        "    tl.store(out_ptr + row, tl.log(tl.sum(tl.exp(v), axis=0)))",
        "    m = tl.max(v, axis=0)\n    tl.store(out_ptr + row, m + tl.log(tl.sum(tl.exp(v - m), axis=0)))",
    )
    assert options(shifted, "logsumexp_shift") == []
    named = LSE_INLINE.replace(
        "    tl.store(out_ptr + row, tl.log(tl.sum(tl.exp(v), axis=0)))",
        "    z = v - tl.max(v, axis=0)\n    tl.store(out_ptr + row, z - tl.log(tl.sum(tl.exp(z), axis=0)))",
    )
    assert options(named, "logsumexp_shift") == []
    softmax = LSE_SPLIT.replace("tl.log(total) / N", "e / total[:, None]")
    assert options(softmax, "logsumexp_shift") == []
    log_of_sum = LSE_INLINE.replace("tl.exp(v)", "v * v")
    assert options(log_of_sum, "logsumexp_shift") == []


# ---------------------------------------------------------------- neutral_init

CUMMAX = kernel("""
    @triton.jit
    def _mx(a, b):
        return tl.maximum(a, b)


    @triton.jit
    def running_max(src, dst, length, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        best = tl.zeros([1], dtype=tl.float32)
        for s in range(0, length, BLOCK):
            idx = s + offs
            v = tl.load(src + r * length + idx, mask=idx < length, other=float("-inf"))
            out = tl.maximum(tl.associative_scan(v, 0, _mx), best)
            tl.store(dst + r * length + idx, out, mask=idx < length)
            best = tl.maximum(best, tl.max(v, axis=0))
""")


def test_neutral_init_running_max_starts_at_minus_inf() -> None:
    assert options(CUMMAX, "neutral_init") == [
        (
            ["    best = tl.zeros([1], dtype=tl.float32)"],
            ['    best = tl.full([1], float("-inf"), dtype=tl.float32)'],
        )
    ]


RUNNING_MIN = kernel("""
    @triton.jit
    def row_min(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        lo = 0.0
        for start in range(0, n, BLOCK):
            cols = start + offs
            x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=float("inf"))
            lo_new = tl.minimum(lo, tl.min(x, axis=0))
            lo = lo_new
        tl.store(out_ptr + row, lo)
""")


def test_neutral_init_running_min_through_a_temporary() -> None:
    assert options(RUNNING_MIN, "neutral_init") == [(["    lo = 0.0"], ['    lo = float("inf")'])]


PRODUCT = kernel("""
    @triton.jit
    def row_prod(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n, BLOCK):
            cols = start + offs
            acc = acc * tl.load(x_ptr + row * n + cols, mask=cols < n, other=1.0)
        tl.store(out_ptr + row, tl.reduce(acc, 0, _mul))
""")


def test_neutral_init_running_product_starts_at_one() -> None:
    assert options(PRODUCT, "neutral_init") == [
        (["    acc = tl.zeros((BLOCK,), tl.float32)"], ["    acc = tl.full((BLOCK,), 1.0, dtype=tl.float32)"])
    ]
    augmented = PRODUCT.replace("acc = acc * tl.load(", "acc *= tl.load(")
    assert options(augmented, "neutral_init")[0][1] == ["    acc = tl.full((BLOCK,), 1.0, dtype=tl.float32)"]


ARGMAX = kernel("""
    @triton.jit
    def row_argmax(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        best = tl.zeros([BLOCK], dtype=tl.float32)
        where = tl.zeros([BLOCK], dtype=tl.int32)
        for start in range(0, n, BLOCK):
            cols = start + offs
            x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=float("-inf"))
            better = x > best
            where = tl.where(better, cols, where)
            best = tl.where(best < x, x, best)
        m = tl.max(best, axis=0)
        tl.store(out_ptr + row, tl.min(tl.where(best == m, where, n), axis=0))
""")


def test_neutral_init_running_argmax_kept_with_where() -> None:
    assert options(ARGMAX, "neutral_init") == [
        (
            ["    best = tl.zeros([BLOCK], dtype=tl.float32)"],
            ['    best = tl.full([BLOCK], float("-inf"), dtype=tl.float32)'],
        )
    ]
    running_min = ARGMAX.replace("tl.where(best < x, x, best)", "tl.where(best < x, best, x)")
    assert options(running_min, "neutral_init")[0][1] == [
        '    best = tl.full([BLOCK], float("inf"), dtype=tl.float32)'
    ]


ONLINE_SOFTMAX = kernel("""
    @triton.jit
    def online(x_ptr, v_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = tl.full([1], float("-inf"), dtype=tl.float32)
        acc = tl.zeros([1], dtype=tl.float32)
        relu_max = tl.zeros([1], dtype=tl.float32)
        total = tl.zeros([1], dtype=tl.float32)
        for start in range(0, n, BLOCK):
            x = tl.load(x_ptr + start + offs, mask=start + offs < n, other=float("-inf"))
            m_new = tl.maximum(m, tl.max(x, axis=0))
            alpha = tl.exp(m - m_new)
            acc *= alpha
            acc += tl.sum(tl.exp(x - m_new), axis=0)
            relu_max = tl.maximum(relu_max, 0.0)
            total += tl.sum(x, axis=0)
            m = m_new
        tl.store(out_ptr, acc + relu_max + total)
""")


def test_neutral_init_leaves_sums_rescaled_sums_and_zero_floors_alone() -> None:
    assert options(ONLINE_SOFTMAX, "neutral_init") == []


# ---------------------------------------------------------------- mask_scores

ATTENTION = kernel("""
    @triton.jit
    def attn(Q, K, V, O, seq_len, head_dim, qk_scale, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_kv = tl.arange(0, BN)
        d = tl.arange(0, BD)
        q = tl.load(Q + rows[:, None] * head_dim + d[None, :], mask=rows[:, None] < seq_len, other=0.0)
        m_i = tl.full([BM], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BM], dtype=tl.float32)
        acc = tl.zeros([BM, BD], dtype=tl.float32)
        for lo in range(0, seq_len, BN):
            kv = lo + offs_kv
            k = tl.load(K + kv[None, :] * head_dim + d[:, None], mask=kv[None, :] < seq_len, other=0.0)
            qk = tl.dot(q, k)
            qk *= qk_scale
            m_new = tl.maximum(m_i, tl.max(qk, axis=1))
            p = tl.exp(qk - m_new[:, None])
            alpha = tl.exp(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, axis=1)
            v = tl.load(V + kv[:, None] * head_dim + d[None, :], mask=kv[:, None] < seq_len, other=0.0)
            acc = acc * alpha[:, None] + tl.dot(p, v)
            m_i = m_new
        tl.store(O + rows[:, None] * head_dim + d[None, :], acc / l_i[:, None], mask=rows[:, None] < seq_len)
""")


def test_mask_scores_masks_the_scaled_scores_of_the_key_tail() -> None:
    assert options(ATTENTION, "mask_scores") == [
        ([], ['        qk = tl.where(kv[None, :] < seq_len, qk, float("-inf"))'])
    ]


ADVANCING = kernel("""
    @triton.jit
    def attn_ptrs(Q, K, V, O, n_q, n_keys, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.arange(0, BN)
        d = tl.arange(0, BD)
        q = tl.load(Q + rows[:, None] * BD + d[None, :])
        k_ptrs = K + d[:, None] + cols[None, :] * BD
        v_ptrs = V + cols[:, None] * BD + d[None, :]
        m_i = tl.full([BM], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BM], dtype=tl.float32)
        acc = tl.zeros([BM, BD], dtype=tl.float32)
        for start in range(0, n_keys, BN):
            s = tl.dot(q, tl.load(k_ptrs))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.exp(s - m_new[:, None])
            alpha = tl.exp(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p, tl.load(v_ptrs))
            m_i = m_new
            k_ptrs += BN * BD
            v_ptrs += BN * BD
        tl.store(O + rows[:, None] * BD + d[None, :], acc / l_i[:, None], mask=rows[:, None] < n_q)
""")


def test_mask_scores_builds_offsets_from_the_loop_start_and_offers_each_length() -> None:
    assert options(ADVANCING, "mask_scores") == [
        ([], [f'        s = tl.where((start + cols)[None, :] < {n}, s, float("-inf"))'])
        for n in ("n_q", "n_keys")
    ]


def test_mask_scores_leaves_masked_scores_and_plain_matmuls_alone() -> None:
    masked = ATTENTION.replace(
        "        qk *= qk_scale\n",
        '        qk *= qk_scale\n        qk = tl.where(kv[None, :] < seq_len, qk, float("-inf"))\n',
    )
    assert options(masked, "mask_scores") == []
    matmul = kernel("""
        @triton.jit
        def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rm = tl.program_id(0) * BM + tl.arange(0, BM)
            rn = tl.arange(0, BN)
            acc = tl.zeros([BM, BN], dtype=tl.float32)
            for k0 in range(0, K, BK):
                rk = k0 + tl.arange(0, BK)
                a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rk[None, :] < K, other=0.0)
                b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=rk[:, None] < K, other=0.0)
                acc = acc + tl.dot(a, b)
            tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
    """)
    assert options(matmul, "mask_scores") == []


# ---------------------------------------------------------------- variance_divisor

LAYER_NORM_REF = ref("""
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln = nn.LayerNorm(d)
        def forward(self, x):
            return self.ln(x)
""")
VAR_REF = ref("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.var(x, dim=1)
""")
BIASED_VAR_REF = ref("""
    import torch
    class Model(torch.nn.Module):
        def forward(self, x):
            return x.var(dim=1, unbiased=False)
""")

ROW_NORM = kernel("""
    @triton.jit
    def row_norm(x_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / n_cols
        xc = tl.where(mask, x - mean, 0.0)
        var = tl.sum(xc * xc, axis=0) / (n_cols - 1)
        tl.store(y_ptr + row * n_cols + offs, xc / tl.sqrt(var + eps), mask=mask)
""")


def test_variance_divisor_biased_for_layer_norm() -> None:
    assert options(ROW_NORM, "variance_divisor", LAYER_NORM_REF) == [
        (["    var = tl.sum(xc * xc, axis=0) / (n_cols - 1)"], ["    var = tl.sum(xc * xc, axis=0) / n_cols"])
    ]


CHANNEL_NORM = kernel("""
    @triton.jit
    def channel_stats(x_ptr, var_ptr, B, HW, BLOCK: tl.constexpr):
        c = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        sq = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, HW, BLOCK):
            idx = start + offs
            t = tl.load(x_ptr + c * HW + idx, mask=idx < HW, other=0.0)
            sq += t * t
        var = tl.sum(sq, axis=0) * (1.0 / (B * HW - 1.0))
        tl.store(var_ptr + c, var)
""")


def test_variance_divisor_follows_an_accumulator_and_keeps_a_product_in_parentheses() -> None:
    bn = ref("import torch.nn as nn\nbn = nn.BatchNorm2d(4)\n")
    assert options(CHANNEL_NORM, "variance_divisor", bn) == [
        (
            ["    var = tl.sum(sq, axis=0) * (1.0 / (B * HW - 1.0))"],
            ["    var = tl.sum(sq, axis=0) * (1.0 / (B * HW))"],
        )
    ]


def test_variance_divisor_in_an_augmented_division() -> None:
    augmented = ROW_NORM.replace(
        "    var = tl.sum(xc * xc, axis=0) / (n_cols - 1)\n",
        "    var = tl.sum(xc * xc, axis=0)\n    var /= n_cols - 1\n",
    )
    assert options(augmented, "variance_divisor", LAYER_NORM_REF) == [
        (["    var /= n_cols - 1"], ["    var /= n_cols"])
    ]
    assert (
        options(augmented.replace("var /= n_cols - 1", "var /= n_cols"), "variance_divisor", LAYER_NORM_REF)
        == []
    )


def test_variance_divisor_unbiased_for_torch_var() -> None:
    biased = ROW_NORM.replace("/ (n_cols - 1)", "/ n_cols")
    assert options(biased, "variance_divisor", VAR_REF) == [
        (["    var = tl.sum(xc * xc, axis=0) / n_cols"], ["    var = tl.sum(xc * xc, axis=0) / (n_cols - 1)"])
    ]


WELFORD_STD = kernel("""
    @triton.jit
    def row_std(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        mean = 0.0
        m2 = 0.0
        for i in range(0, n):
            x = tl.load(x_ptr + row * n + i)
            delta = x - mean
            mean += delta / (i + 1)
            m2 += delta * (x - mean)
        tl.store(out_ptr + row, tl.sqrt(m2 / n))
""")


def test_variance_divisor_finds_a_variance_by_its_square_root() -> None:
    std = ref("import torch\ndef f(x):\n    return torch.std(x, dim=1)\n")
    assert options(WELFORD_STD, "variance_divisor", std) == [
        (
            ["    tl.store(out_ptr + row, tl.sqrt(m2 / n))"],
            ["    tl.store(out_ptr + row, tl.sqrt(m2 / (n - 1)))"],
        )
    ]


def test_variance_divisor_leaves_agreeing_kernels_means_and_unknown_references_alone() -> None:
    biased = ROW_NORM.replace("/ (n_cols - 1)", "/ n_cols")
    assert options(biased, "variance_divisor", LAYER_NORM_REF) == []
    assert options(biased, "variance_divisor", BIASED_VAR_REF) == []
    assert options(ROW_NORM, "variance_divisor", VAR_REF) == []
    assert options(ROW_NORM, "variance_divisor", None) == []
    assert options(ROW_NORM, "variance_divisor", ref("import torch\ny = torch.softmax(x, 1)\n")) == []
    by_block = ROW_NORM.replace("/ (n_cols - 1)", "/ BLOCK")
    assert options(by_block, "variance_divisor", VAR_REF) == []


# ---------------------------------------------------------------- drop_divisor

LP_REF = ref("""
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.LPPool2d(2, kernel_size=2)
        def forward(self, x):
            return self.pool(x)
""")

LP_POOL = kernel("""
    @triton.jit
    def lp2d(x_ptr, y_ptr, H, W, OW, n_out, KH: tl.constexpr, KW: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_out
        oh = offs // OW
        ow = offs % OW
        area = KH * KW
        ssq = tl.zeros([BLOCK], dtype=tl.float32)
        for i in tl.static_range(KH):
            for j in tl.static_range(KW):
                v = tl.load(x_ptr + (oh * KH + i) * W + ow * KW + j, mask=mask, other=0.0)
                ssq += v * v
        tl.store(y_ptr + offs, tl.sqrt(ssq / area), mask=mask)
""")


def test_drop_divisor_removes_the_window_size_for_lp_pool() -> None:
    assert options(LP_POOL, "drop_divisor", LP_REF) == [
        (
            ["    tl.store(y_ptr + offs, tl.sqrt(ssq / area), mask=mask)"],
            ["    tl.store(y_ptr + offs, tl.sqrt(ssq), mask=mask)"],
        )
    ]


ROW_L2 = kernel("""
    @triton.jit
    def row_l2(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
        ss = tl.sum(x * x, axis=0)
        ss /= n_cols
        tl.store(y_ptr + row, tl.sqrt(ss))
""")


def test_drop_divisor_removes_an_augmented_division_for_a_norm() -> None:
    norm = ref(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.norm(x, p=2, dim=1)\n"
    )
    assert options(ROW_L2, "drop_divisor", norm) == [(["    ss /= n_cols"], [])]


def test_drop_divisor_stays_silent_where_the_reference_averages() -> None:
    avg = ref("import torch.nn as nn\npool = nn.AvgPool2d(2)\n")
    rms = ref("import torch\ndef f(x):\n    return torch.sqrt(x.pow(2).mean(-1))\n")
    explicit_mean = ref("import torch\ndef f(x):\n    return x.sum(dim=1) / x.shape[1]\n")
    for context in (avg, rms, explicit_mean, None):
        assert options(LP_POOL, "drop_divisor", context) == []
        assert options(ROW_L2, "drop_divisor", context) == []


# ---------------------------------------------------------------- every rule


# Reduction rules that belong to the normalisation family.
DIVISORS = (normalisation.variance_divisor, normalisation.drop_divisor)


@pytest.mark.parametrize("rule", [r.id for r in (*reduction_rules.RULES, *DIVISORS)])
def test_every_reduction_rule_has_a_kernel_it_applies_to(rule: str) -> None:
    examples = [LSE_INLINE, LSE_SPLIT, LSE_LOOP, CUMMAX, ARGMAX, PRODUCT, ATTENTION, ROW_NORM, LP_POOL]
    contexts = [LAYER_NORM_REF, LP_REF]
    found = [rw for source in examples for context in contexts for rw in propose(source, [rule], context)]
    assert found
    for rw in found:
        compile(rw.source, "candidate.py", "exec")
        assert rw.rule == rule
