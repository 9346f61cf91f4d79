from __future__ import annotations

import textwrap
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from kernel_medic.graph.api import repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.repair.rules import (
    host,
    layout,
    loops,
    masks,
    normalisation,
    numerics,
    operators,
    precision,
)
from kernel_medic.tools.repair.rules.base import Rewrite, RuleContext
from kernel_medic.tools.repair.rules.registry import RULES, propose, rank_rules
from problems import LIGHT_TOML, write_problem

REPO = Path(__file__).resolve().parents[1]
HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


def kernel(body: str) -> str:
    return HEADER + textwrap.dedent(body).lstrip("\n")


def only_change(old: str, new: str) -> tuple[int, list[str], list[str]]:
    """(1-based first line, removed lines, added lines) of the single changed hunk; every other line equal."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    hunks = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    assert len(hunks) == 1, hunks
    _, i1, i2, j1, j2 = hunks[0]
    return i1 + 1, a[i1:i2], b[j1:j2]


def by_rule(source: str, rule: str) -> list[Rewrite]:
    return propose(source, [rule])


def single(source: str, rule: str) -> tuple[Rewrite, int, list[str], list[str]]:
    rewrites = by_rule(source, rule)
    assert len(rewrites) == 1, [r.description for r in rewrites]
    line, removed, added = only_change(source, rewrites[0].source)
    assert rewrites[0].line == line
    return rewrites[0], line, removed, added


# ---------------------------------------------------------------- neutral_other_max

MAX_VIA_ASSIGN = kernel("""
    @triton.jit
    def row_max(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0)
        y = x * 2.0
        tl.store(out_ptr, tl.max(y, axis=0))
""")


def test_bundled_softmax_example_gets_neg_inf_padding() -> None:
    source = (REPO / "examples/softmax_tail/candidate.py").read_text()
    rewrites = [r for r in propose(source) if r.rule == "neutral_other_max"]
    assert len(rewrites) == 1
    line, removed, added = only_change(source, rewrites[0].source)
    assert rewrites[0].line == line == 12
    assert removed == [removed[0]] and "other=0.0)" in removed[0]
    assert added == [removed[0].replace("other=0.0)", 'other=-float("inf"))')]


def test_other_zero_reaching_max_through_assignments() -> None:
    rw, line, removed, added = single(MAX_VIA_ASSIGN, "neutral_other_max")
    assert added == ['    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))\n']
    assert "tl.max" in rw.description and "row_max" in rw.description


def test_min_gets_positive_infinity() -> None:
    source = MAX_VIA_ASSIGN.replace("tl.max(", "tl.min(")
    _, _, _, added = single(source, "neutral_other_max")
    assert added == ['    x = tl.load(x_ptr + offs, mask=mask, other=float("inf"))\n']


def test_masked_load_without_other_gets_one() -> None:
    source = MAX_VIA_ASSIGN.replace(", other=0)", ")")
    _, _, _, added = single(source, "neutral_other_max")
    assert added == ['    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))\n']


def test_load_written_inside_the_reduction() -> None:
    source = kernel("""
        @triton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            mask = tl.arange(0, BLOCK) < n
            tl.store(out_ptr, tl.max(tl.load(x_ptr + tl.arange(0, BLOCK), mask=mask, other=0.0), axis=0))
    """)
    _, _, _, added = single(source, "neutral_other_max")
    assert 'other=-float("inf")), axis=0))' in added[0]


def test_zero_padding_feeding_only_a_sum_is_left_alone() -> None:
    source = MAX_VIA_ASSIGN.replace("tl.max(", "tl.sum(")
    assert by_rule(source, "neutral_other_max") == []


# ---------------------------------------------------------------- mask_le_to_lt

LE_MASK = kernel("""
    @triton.jit
    def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        row_mask = offs <= n
        x = tl.load(x_ptr + offs, mask=row_mask)
        tl.store(out_ptr + offs, x, mask=row_mask)
""")


def test_le_in_mask_assignment_becomes_lt() -> None:
    _, line, removed, added = single(LE_MASK, "mask_le_to_lt")
    assert removed == ["    row_mask = offs <= n\n"] and added == ["    row_mask = offs < n\n"]


def test_le_passed_as_mask_argument_becomes_lt() -> None:
    source = kernel("""
        @triton.jit
        def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs <= n, other=0.0)
            tl.store(out_ptr + offs, x, mask=offs < n)
    """)
    _, _, _, added = single(source, "mask_le_to_lt")
    assert added == ["    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"]


def test_inline_masks_on_global_row_offsets_compare_the_lanes() -> None:
    source = kernel("""
        @triton.jit
        def softmax(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * stride + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offsets, mask=offsets < n_cols, other=-float("inf"))
            tl.store(out_ptr + offsets, x - tl.max(x, axis=0), mask=offsets < n_cols)
    """)
    [rewrite] = [r for r in by_rule(source, "mask_offsets")]
    # Both the load's and the store's mask change in one edit: either alone leaves rows unwritten.
    assert rewrite.source.count("mask=tl.arange(0, BLOCK) < n_cols") == 2
    # A flat kernel whose programs tile the range by the block already compares the right offsets.
    flat = source.replace("tl.program_id(0) * stride", "tl.program_id(0) * BLOCK")
    assert by_rule(flat, "mask_offsets") == []


def test_a_comparison_swallowed_by_an_ampersand_is_regrouped_around_its_own_operands() -> None:
    # `a < M & k` parses as `a < (M & k)` (M & True is M's lowest bit): the A tile of a matmul read nothing.
    source = kernel("""
        @triton.jit
        def k(a_ptr, b_ptr, out_ptr, M, N, K, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            k_mask = r < K
            a = tl.load(a_ptr + r[:, None] * K + r[None, :], mask=r[:, None] < M & k_mask[None, :])
            b = tl.load(b_ptr + r[:, None] * N + r[None, :], mask=k_mask[:, None] & r[None, :] < N)
            c_mask = (r[:, None] < M) & (r[None, :] < N)
            tl.store(out_ptr + r[:, None] * N + r[None, :], tl.dot(a, b), mask=c_mask)
    """)
    found = {rw.description: rw.source for rw in propose(source, ["mask_precedence"])}
    assert set(found) == {
        "r[:, None] < M & k_mask[None, :] -> (r[:, None] < M) & k_mask[None, :] (line 10)",
        "k_mask[:, None] & r[None, :] < N -> k_mask[:, None] & (r[None, :] < N) (line 11)",
        "every comparison regrouped around its operands (2 sites) (line 10)",
    }, set(found)
    both = found["every comparison regrouped around its operands (2 sites) (line 10)"]
    assert "mask=(r[:, None] < M) & k_mask[None, :])" in both
    assert "mask=k_mask[:, None] & (r[None, :] < N))" in both
    # Already grouped (the store's mask) or a comparison without a bit operation: nothing to regroup.
    grouped = kernel(NEW_RULE_KERNELS["mask_precedence"]).replace("rm < M & rn < N", "(rm < M) & (rn < N)")
    assert not propose(grouped, ["mask_precedence"])


def test_le_not_used_as_mask_and_lower_bounds_are_untouched() -> None:
    not_a_mask = LE_MASK.replace("row_mask = offs <= n", "last = offs <= n").replace("row_mask", "offs < n")
    assert by_rule(not_a_mask, "mask_le_to_lt") == []
    bounded = LE_MASK.replace("row_mask = offs <= n", "row_mask = (offs >= 0) & (0 <= offs) & (offs < n)")
    assert by_rule(bounded, "mask_le_to_lt") == []


# ---------------------------------------------------------------- store_mask

UNMASKED_STORE = LE_MASK.replace("offs <= n", "offs < n").replace("x, mask=row_mask)", "x)")


def test_unmasked_store_gets_the_loads_mask() -> None:
    _, _, removed, added = single(UNMASKED_STORE, "store_mask")
    assert removed == ["    tl.store(out_ptr + offs, x)\n"]
    assert added == ["    tl.store(out_ptr + offs, x, mask=row_mask)\n"]


def test_store_through_a_pointer_variable_gets_the_mask() -> None:
    source = UNMASKED_STORE.replace(
        "tl.store(out_ptr + offs, x)", "ptrs = out_ptr + offs\n    tl.store(ptrs, x)"
    )
    _, _, _, added = single(source, "store_mask")
    assert added == ["    tl.store(ptrs, x, mask=row_mask)\n"]


def test_store_already_masked_or_scalar_is_untouched() -> None:
    assert by_rule(LE_MASK.replace("offs <= n", "offs < n"), "store_mask") == []
    # A reduction result stored at one address must not take the per-lane mask.
    assert by_rule(MAX_VIA_ASSIGN, "store_mask") == []


def test_multiline_store_with_trailing_comma_keeps_its_layout() -> None:
    source = UNMASKED_STORE.replace(
        "tl.store(out_ptr + offs, x)", "tl.store(\n        out_ptr + offs,\n        x,\n    )"
    )
    (rw,) = by_rule(source, "store_mask")
    assert "tl.store(\n        out_ptr + offs,\n        x,\n        mask=row_mask,\n    )" in rw.source
    compile(rw.source, "candidate.py", "exec")


# ---------------------------------------------------------------- grid_cdiv

FLOOR_GRID = kernel("""
    class ModelNew(torch.nn.Module):
        def forward(self, x):
            n = x.numel()
            half = n // 2
            out = torch.empty_like(x)
            copy[(n // 128,)](x, out, n, BLOCK=128)
            return out
""")


def test_floor_division_in_launch_grid_becomes_cdiv() -> None:
    _, _, removed, added = single(FLOOR_GRID, "grid_cdiv")
    assert removed == ["        copy[(n // 128,)](x, out, n, BLOCK=128)\n"]
    assert added == ["        copy[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)\n"]


def test_floor_division_in_grid_assignment_and_missing_import() -> None:
    source = FLOOR_GRID.replace("import triton\n", "").replace(
        "copy[(n // 128,)]", "grid = (n // 128, x.shape[0])\n        copy[grid]"
    )
    (rw,) = by_rule(source, "grid_cdiv")
    assert "        grid = (triton.cdiv(n, 128), x.shape[0])\n" in rw.source
    assert "import triton\n" in rw.source and "half = n // 2" in rw.source
    compile(rw.source, "candidate.py", "exec")


def test_floor_division_in_a_name_the_grid_uses() -> None:
    source = FLOOR_GRID.replace("copy[(n // 128,)]", "n_blocks = n // 128\n        copy[(n_blocks,)]")
    (rw,) = by_rule(source, "grid_cdiv")
    assert "        n_blocks = triton.cdiv(n, 128)\n" in rw.source
    assert "half = n // 2" in rw.source  # a floor division the grid does not use stays


def test_cdiv_and_ceiling_division_grids_are_untouched() -> None:
    assert by_rule(FLOOR_GRID.replace("(n // 128,)", "(triton.cdiv(n, 128),)"), "grid_cdiv") == []
    assert by_rule(FLOOR_GRID.replace("(n // 128,)", "((n + 128 - 1) // 128,)"), "grid_cdiv") == []


# ---------------------------------------------------------------- program_blind_index

# Every program loads and stores the same first block: the kernel never reads its program id, the grid is 1.
PROGRAM_BLIND = kernel("""
    @triton.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            scale[(1,)](x, out, x.numel(), BLOCK=256)
            return out
""")


def test_a_program_blind_kernel_gets_a_program_offset_and_a_grid_over_the_output() -> None:
    (rw,) = by_rule(PROGRAM_BLIND, "program_blind_index")
    assert "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)" in rw.source
    assert "scale[(triton.cdiv(out.numel(), 256),)](x, out, x.numel(), BLOCK=256)" in rw.source
    one = PROGRAM_BLIND.replace("BLOCK=256", "BLOCK=1")
    (rw,) = by_rule(one, "program_blind_index")
    assert "scale[(out.numel(),)]" in rw.source
    # A kernel that reads its program id is not program-blind, whatever its grid.
    aware = PROGRAM_BLIND.replace("offs = tl.arange", "offs = tl.program_id(0) + tl.arange")
    assert by_rule(aware, "program_blind_index") == []


SCALAR_PER_PROGRAM = kernel("""
    @triton.jit
    def add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        start = pid * BLOCK
        if start < n:
            tl.store(c_ptr + start, tl.load(a_ptr + start) + tl.load(b_ptr + start))


    def custom_add(a, b):
        c = torch.empty_like(a)
        n_blocks = triton.cdiv(a.numel(), 16)
        add[n_blocks, 16](a, b, c, a.numel(), BLOCK=16)
        return c
""")


def test_a_scalar_kernel_stepping_by_its_block_indexes_by_program_over_every_element() -> None:
    (rw,) = by_rule(SCALAR_PER_PROGRAM, "scalar_program_stride")
    assert "    start = pid\n" in rw.source and "    n_blocks = a.numel()\n" in rw.source
    # A kernel with lanes (tl.arange) covers its block: the stride is right.
    lanes = SCALAR_PER_PROGRAM.replace("start = pid * BLOCK", "start = pid * BLOCK + tl.arange(0, BLOCK)")
    assert by_rule(lanes, "scalar_program_stride") == []


def test_a_stride_pair_passed_by_keyword_under_each_others_names_is_swapped() -> None:
    source = kernel("""
        def matmul(a, b, c):
            mm[(1,)](a, b, c, stride_bn=b.stride(0), stride_bk=b.stride(1), BLOCK=32)
    """)
    (rw,) = by_rule(source, "stride_args_swap")
    assert "stride_bn=b.stride(1), stride_bk=b.stride(0)" in rw.source
    # A keyword next to a positional argument is no pair.
    mixed = source.replace("stride_bn=b.stride(0)", "b.stride(0)")
    assert by_rule(mixed, "stride_args_swap") == []


def test_a_program_blind_kernel_is_repaired_end_to_end(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", PROGRAM_BLIND, toml=LIGHT_TOML)
    result = repair(folder, None, RepairConfig(strategy="offline", workers=2), trace=tmp_path / "t.jsonl")
    assert result.status == "repaired", (result.stop_reason, [a["description"] for a in result.attempts])
    assert result.attempts[0]["rule"] == "program_blind_index"


# ---------------------------------------------------------------- fp32_accumulator

HALF_ACC = kernel("""
    @triton.jit
    def total(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        acc = tl.zeros((BLOCK,), dtype=tl.float16)
        for start in range(0, n, BLOCK):
            acc += tl.load(x_ptr + start + tl.arange(0, BLOCK))
        tl.store(out_ptr, tl.sum(acc, axis=0))
""")


def test_half_accumulator_becomes_fp32() -> None:
    _, _, _, added = single(HALF_ACC, "fp32_accumulator")
    assert added == ["    acc = tl.zeros((BLOCK,), dtype=tl.float32)\n"]
    _, _, _, added = single(HALF_ACC.replace("tl.float16", "tl.bfloat16"), "fp32_accumulator")
    assert added == ["    acc = tl.zeros((BLOCK,), dtype=tl.float32)\n"]


def test_fp32_accumulator_is_untouched() -> None:
    assert by_rule(HALF_ACC.replace("tl.float16", "tl.float32"), "fp32_accumulator") == []


HALF_STORE = kernel("""
    @triton.jit
    def mm(a_ptr, c_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), dtype=tl.float32) + tl.load(a_ptr + r)
        c = acc.to(tl.float16)
        tl.store(c_ptr + r, c)
""")


def test_a_half_cast_before_the_store_of_a_float32_output_becomes_float32() -> None:
    (rw,) = by_rule(HALF_STORE, "half_store")
    assert "    c = acc.to(tl.float32)\n" in rw.source
    # A half-precision output keeps its cast; a cast that is never stored is not this bug.
    half = RuleContext(output_dtype="float16")
    assert propose(HALF_STORE, ["half_store"], half) == []
    unstored = HALF_STORE.replace("tl.store(c_ptr + r, c)", "tl.store(c_ptr + r, acc)")
    assert by_rule(unstored, "half_store") == []


# ---------------------------------------------------------------- eps_inside_sqrt

NORM = kernel("""
    @triton.jit
    def norm(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=0.0)
        var = tl.sum(x * x, axis=0) / n_cols
        y = x / (tl.sqrt(var) + eps)
        tl.store(out_ptr + cols, y, mask=mask)
""")


def test_eps_moves_under_the_square_root() -> None:
    _, _, _, added = single(NORM, "eps_inside_sqrt")
    assert added == ["    y = x / tl.sqrt(var + eps)\n"]


def test_reciprocal_sqrt_plus_eps_becomes_rsqrt() -> None:
    source = NORM.replace(
        "y = x / (tl.sqrt(var) + eps)", "rstd = 1.0 / (tl.sqrt(var) + eps)\n    y = x * rstd"
    )
    _, _, _, added = single(source, "eps_inside_sqrt")
    assert added == ["    rstd = tl.rsqrt(var + eps)\n"]


def test_eps_already_inside_is_untouched() -> None:
    assert by_rule(NORM.replace("(tl.sqrt(var) + eps)", "tl.sqrt(var + eps)"), "eps_inside_sqrt") == []
    assert by_rule(NORM.replace("(tl.sqrt(var) + eps)", "(tl.sqrt(var) + x)"), "eps_inside_sqrt") == []


# ---------------------------------------------------------------- divide_by_n_not_block

MEAN_BY_BLOCK = NORM.replace("/ n_cols", "/ BLOCK")


def test_division_by_block_becomes_division_by_the_masked_size() -> None:
    rw, _, removed, added = single(MEAN_BY_BLOCK, "divide_by_n_not_block")
    assert removed == ["    var = tl.sum(x * x, axis=0) / BLOCK\n"]
    assert added == ["    var = tl.sum(x * x, axis=0) / n_cols\n"]
    assert "n_cols" in rw.description


def test_division_without_a_masked_size_or_by_a_runtime_value_is_untouched() -> None:
    assert by_rule(NORM, "divide_by_n_not_block") == []
    no_mask = MEAN_BY_BLOCK.replace("mask = cols < n_cols", "mask = cols < BLOCK")
    assert by_rule(no_mask, "divide_by_n_not_block") == []


# ---------------------------------------------------------------- contiguous_inputs

FORWARD = kernel('''
    class ModelNew(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor, dim: int = 1) -> torch.Tensor:
            """Adds."""
            out = torch.empty_like(x)
            add_kernel[(x.numel(),)](x, y, out)
            return out
''')


def test_contiguous_per_tensor_and_all_at_once() -> None:
    rewrites = by_rule(FORWARD, "contiguous_inputs")
    assert len(rewrites) == 3
    inserted = []
    for rw in rewrites:
        line, removed, added = only_change(FORWARD, rw.source)
        assert removed == [] and line == rw.line
        assert FORWARD.splitlines()[line - 1] == "        out = torch.empty_like(x)"
        inserted.append(added)
    assert inserted == [
        ["        x = x.contiguous()\n"],
        ["        y = y.contiguous()\n"],
        ["        x = x.contiguous()\n", "        y = y.contiguous()\n"],
    ]


def test_inputs_already_contiguous_are_skipped() -> None:
    source = FORWARD.replace(
        "out = torch.empty_like(x)", "x = x.contiguous()\n        out = torch.empty_like(x)"
    )
    (rw,) = by_rule(source, "contiguous_inputs")
    _, _, added = only_change(source, rw.source)
    assert added == ["        y = y.contiguous()\n"]


# ---------------------------------------------------------------- propose / rank_rules


def test_every_rewrite_parses_and_names_its_line() -> None:
    sources = [MAX_VIA_ASSIGN, LE_MASK, UNMASKED_STORE, FLOOR_GRID, HALF_ACC, NORM, MEAN_BY_BLOCK, FORWARD]
    rules_seen = set()
    for source in sources:
        for rw in propose(source):
            compile(rw.source, "candidate.py", "exec")
            line, _, _ = only_change(source, rw.source)
            assert rw.line == line and f"(line {line})" in rw.description
            rules_seen.add(rw.rule)
    assert rules_seen <= set(RULES)  # test_every_rule_has_a_kernel_it_applies_to covers every rule


def test_propose_orders_by_rule_and_filters_rules() -> None:
    source = (REPO / "examples/softmax_tail/candidate.py").read_text()
    assert [r.rule for r in propose(source)][:2] == ["neutral_other_max", "contiguous_inputs"]
    assert [r.rule for r in propose(source, ["contiguous_inputs"])] == ["contiguous_inputs"]
    assert propose(source, []) == []
    with pytest.raises(ValueError, match="no_such_rule"):
        propose(source, ["no_such_rule"])


def test_propose_deduplicates_identical_results() -> None:
    source = FORWARD.replace(", y: torch.Tensor", "")
    assert len(propose(source, ["contiguous_inputs", "contiguous_inputs"])) == 1


def test_propose_on_unparsable_text_offers_only_the_text_rule() -> None:
    assert {rw.rule for rw in propose("def broken(:\n    return\n")} <= {"syntax_salvage"}
    assert propose("def broken(:\n    return\n", ["contiguous_inputs", "store_mask"]) == []
    assert propose("class ModelNew(\n") == []  # mending it would cut the entry point away


def test_rank_rules_orders_by_matching_symptoms() -> None:
    assert rank_rules(["noncontig", "transposed"])[0] == "contiguous_inputs"
    assert rank_rules(["x100", "grows_with_magnitude"])[0] == "fp32_accumulator"
    ranked = rank_rules(["out_of_bounds_write", "tail_block", "garbage_region"])
    # mask_le_to_lt and store_mask both match all three: the tie keeps registry order.
    assert ranked[:2] == ["mask_le_to_lt", "store_mask"]
    assert sorted(ranked) == sorted(RULES)
    assert rank_rules([]) == list(RULES)


# ---------------------------------------------------------------- the taxonomy's other rules
# One small kernel per rule, written from /work/shared/bug-taxonomy.md: the first rewrite changes exactly the
# expected line; applied to its own fix (or to the correct kernel) the rule proposes nothing of the kind.

NEW_RULE_KERNELS = {
    "load_mask": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, x, mask=mask)
""",
    "mask_precedence": """
    @triton.jit
    def k(x_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
        rm = tl.arange(0, BLOCK)[:, None]
        rn = tl.arange(0, BLOCK)[None, :]
        mask = rm < M & rn < N
        tl.store(out_ptr + rm * N + rn, tl.load(x_ptr + rm * N + rn, mask=mask), mask=mask)
""",
    "mask_offsets": """
    @triton.jit
    def k(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        offs = tl.program_id(0) * stride + cols
        mask = offs < n_cols
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
""",
    "neutral_other_exp": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        e = tl.exp(x)
        tl.store(out_ptr + offs, e / tl.sum(e, axis=0), mask=mask)
""",
    "neutral_other_sum": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
        tl.store(out_ptr, tl.sum(x, axis=0))
""",
    "softmax_max_subtraction": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x)
        tl.store(out_ptr + offs, e / tl.sum(e, axis=0), mask=mask)
""",
    "online_softmax_rescale": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        m_i = -float("inf")
        l_i = 0.0
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
            m_new = tl.maximum(m_i, tl.max(x, axis=0))
            l_i = l_i + tl.sum(tl.exp(x - m_new), axis=0)
            m_i = m_new
        tl.store(out_ptr, m_i + tl.log(l_i))
""",
    "fp32_upcast_load": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr, tl.sum(x, axis=0))
""",
    "dot_ieee": """
    @triton.jit
    def k(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
        b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
        tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))
""",
    "variance_bias": """
    @triton.jit
    def k(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < N
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        d = tl.where(mask, x - tl.sum(x, axis=0) / N, 0.0)
        tl.store(out_ptr, tl.sum(d * d, axis=0) / N)
""",
    "mask_centered": """
    @triton.jit
    def k(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < N
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / N
        d = x - mean
        tl.store(out_ptr, tl.sum(d * d, axis=0) / N)
""",
    "affine_weight_bias": """
    @triton.jit
    def k(x_ptr, w_ptr, b_ptr, out_ptr, N, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + cols, mask=mask, other=0.0)
        tl.store(out_ptr + cols, x / tl.sum(x, axis=0), mask=mask)
""",
    "stride_args_swap": """
    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            k[(x.shape[0],)](x, out, x.stride(1), x.stride(0), BLOCK=128)
            return out
""",
    "stride_index": """
    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            k[(x.shape[0],)](x, out, x.stride(1), BLOCK=128)
            return out
""",
    "row_times_stride": """
    @triton.jit
    def k(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
        tl.store(out_ptr + row * stride_row + cols, x, mask=cols < n_cols)
""",
    "k_loop_advance": """
    @triton.jit
    def k(a_ptr, c_ptr, K, stride_am, stride_ak, BLOCK_K: tl.constexpr):
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_k[None, :] * stride_ak
        acc = tl.zeros((1, BLOCK_K), dtype=tl.float32)
        for kk in range(0, tl.cdiv(K, BLOCK_K)):
            acc += tl.load(a_ptrs, mask=offs_k[None, :] < K - kk * BLOCK_K, other=0.0)
            a_ptrs += BLOCK_K
        tl.store(c_ptr + offs_k[None, :], acc)
""",
    "k_loop_tail": """
    @triton.jit
    def k(a_ptr, c_ptr, K, stride_ak, BLOCK_K: tl.constexpr):
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_k[None, :] * stride_ak
        acc = tl.zeros((1, BLOCK_K), dtype=tl.float32)
        for kk in range(0, tl.cdiv(K, BLOCK_K)):
            acc += tl.load(a_ptrs)
            a_ptrs += BLOCK_K * stride_ak
        tl.store(c_ptr + offs_k[None, :], acc)
""",
    "program_id_swap": """
    @triton.jit
    def k(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
        pid_m = tl.program_id(1)
        pid_n = tl.program_id(0)
        tl.store(out_ptr + pid_m * N + pid_n, tl.load(x_ptr + pid_m * N + pid_n))
""",
    "reduction_axis": """
    @triton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])
        tl.store(out_ptr + r, tl.sum(x, axis=0))
""",
    "bias_broadcast_axis": """
    @triton.jit
    def k(x_ptr, bias_ptr, out_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        bias = tl.load(bias_ptr + r)
        x = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])
        tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], x + bias[:, None])
""",
    "gelu_form": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
        tl.store(out_ptr + offs, y, mask=offs < n)
""",
    "silu_beta": """
    @triton.jit
    def k(x_ptr, out_ptr, n, beta, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=offs < n)
""",
    "constructor_constant": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, tl.where(x > 0, x, x * 0.01), mask=offs < n)
""",
    "softplus_threshold": """
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, tl.log(1.0 + tl.exp(x)), mask=offs < n)
""",
    "scan_exclusive": """
    @triton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, tl.cumsum(x, axis=0))
""",
    "output_dtype": """
    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty(x.shape, device=x.device, dtype=torch.float32)
            k[(1,)](x, out, BLOCK=128)
            return out
""",
    "conv_output_size": """
    class ModelNew(nn.Module):
        def forward(self, x):
            H = x.shape[2]
            H_out = (H + 2 * self.padding - self.kernel_size) // self.stride + 1
            return x[:, :, :H_out]
""",
    "loss_mean_count": """
    class ModelNew(nn.Module):
        def forward(self, predictions, targets):
            out = torch.empty_like(predictions)
            k[(1,)](predictions, targets, out, BLOCK=128)
            return out.sum() / predictions.shape[0]
""",
    "count_include_pad": """
    @triton.jit
    def pool(x_ptr, out_ptr, H, KH: tl.constexpr, KW: tl.constexpr):
        acc = 0.0
        count = 0.0
        for i in range(KH):
            for j in range(KW):
                ok = i < H
                acc += tl.load(x_ptr + i * KW + j, mask=ok, other=0.0)
                count += tl.where(ok, 1.0, 0.0)
        tl.store(out_ptr, acc / (KH * KW))
""",
    "ignore_index": """
    @triton.jit
    def nll(logp_ptr, target_ptr, out_ptr, C, ignore_index, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        t = tl.load(target_ptr + row)
        loss = -tl.load(logp_ptr + row * C + t)
        tl.store(out_ptr + row, loss)
""",
}
LEAKY_REFERENCE = """
import torch.nn as nn
negative_slope = 0.2

class Model(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()

def get_init_inputs():
    return [negative_slope]
"""


EXPECTED_LINE = {
    "load_mask": "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n",
    "mask_precedence": "    mask = (rm < M) & (rn < N)\n",
    "mask_offsets": "    mask = cols < n_cols\n",
    "neutral_other_exp": '    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))\n',
    "neutral_other_sum": "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n",
    "softmax_max_subtraction": "    x = x - tl.max(x, axis=0)\n",
    "online_softmax_rescale": "        l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(x - m_new), axis=0)\n",
    "fp32_upcast_load": "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)\n",
    "dot_ieee": '    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b, input_precision="ieee"))\n',  # noqa: E501
    "variance_bias": "    tl.store(out_ptr, tl.sum(d * d, axis=0) / (N - 1))\n",
    "mask_centered": "    d = tl.where(mask, x - mean, 0.0)\n",
    "affine_weight_bias": "    tl.store(out_ptr + cols, (x / tl.sum(x, axis=0)) * tl.load(w_ptr + cols, mask=mask, other=0.0) + tl.load(b_ptr + cols, mask=mask, other=0.0), mask=mask)\n",  # noqa: E501
    "stride_args_swap": "        k[(x.shape[0],)](x, out, x.stride(0), x.stride(1), BLOCK=128)\n",
    "stride_index": "        k[(x.shape[0],)](x, out, x.stride(0), BLOCK=128)\n",
    "row_times_stride": "    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols)\n",
    "k_loop_advance": "        a_ptrs += BLOCK_K * stride_ak\n",
    "k_loop_tail": "        acc += tl.load(a_ptrs, mask=offs_k[None, :] < K - kk * BLOCK_K, other=0.0)\n",
    "program_id_swap": "    pid_m = tl.program_id(0)\n",
    "reduction_axis": "    tl.store(out_ptr + r, tl.sum(x, axis=1))\n",
    "bias_broadcast_axis": "    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], x + bias[None, :])\n",
    "gelu_form": "    y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))\n",
    "silu_beta": "    tl.store(out_ptr + offs, x * tl.sigmoid(beta * x), mask=offs < n)\n",
    "constructor_constant": "    tl.store(out_ptr + offs, tl.where(x > 0, x, x * 0.2), mask=offs < n)\n",
    "softplus_threshold": "    tl.store(out_ptr + offs, tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x))), mask=offs < n)\n",  # noqa: E501
    "scan_exclusive": "    tl.store(out_ptr + offs, (tl.cumsum(x, axis=0) - x))\n",
    "output_dtype": "        out = torch.empty(x.shape, device=x.device, dtype=x.dtype)\n",
    "conv_output_size": "        H_out = (H + 2 * self.padding - (self.kernel_size - 1) - 1) // self.stride + 1\n",  # noqa: E501
    "loss_mean_count": "        return out.sum() / predictions.numel()\n",
    "count_include_pad": "    tl.store(out_ptr, acc / count)\n",
    "ignore_index": "    tl.store(out_ptr + row, tl.where(t != ignore_index, loss, 0.0))\n",
}

LEAKY_CONTEXT = RuleContext.from_reference(LEAKY_REFERENCE)


@pytest.mark.parametrize("rule_id", sorted(NEW_RULE_KERNELS))
def test_rule_changes_exactly_the_expected_line(rule_id: str) -> None:
    source = kernel(NEW_RULE_KERNELS[rule_id])
    rewrites = propose(source, [rule_id], LEAKY_CONTEXT)
    assert rewrites, rule_id
    first = rewrites[0]
    line, removed, added = only_change(source, first.source)
    assert first.rule == rule_id and first.line == line and f"(line {line})" in first.description
    assert EXPECTED_LINE[rule_id] in added
    compile(first.source, "candidate.py", "exec")


def test_every_rule_has_a_kernel_it_applies_to() -> None:
    covered = set(NEW_RULE_KERNELS) | {
        r.rule
        for s in (MAX_VIA_ASSIGN, LE_MASK, UNMASKED_STORE, FLOOR_GRID, HALF_ACC, HALF_STORE)
        + (NORM, MEAN_BY_BLOCK, FORWARD)
        for r in propose(s)
    }
    # The taxonomy's rules; the rule families with their own test modules are covered there.
    families = (masks, numerics, precision, normalisation, layout, loops, operators)
    taxonomy = {r.id for family in families for r in family.RULES} | {host.output_dtype.id}
    taxonomy -= {normalisation.variance_divisor.id, normalisation.drop_divisor.id}
    # floor_mod needs a reference that takes a remainder, contiguous_view a wrapper handing a kernel a view:
    # tests/test_llm_shaped_rules.py covers both. The reduction family's mask_reduced_operand also fires on
    # NORM's centred sum (its own tests are there too).
    taxonomy -= {operators.floor_mod.id, layout.contiguous_view.id}
    # The overflow-free forms of exp (stable_log_exp inserts a line) are covered there as well, with logs of a
    # sigmoid and buffers allocated in half precision (round 37).
    taxonomy -= {numerics.stable_log_exp.id, numerics.stable_exp_ratio.id, numerics.stable_log_sigmoid.id}
    taxonomy -= {precision.half_buffer.id}
    covered -= {"mask_reduced_operand"}
    assert covered == taxonomy


# Rules whose fix is a one-way repair: applied once more to the repaired kernel, they find nothing to do.
ONE_WAY = [
    "load_mask",
    "mask_precedence",
    "neutral_other_exp",
    "neutral_other_sum",
    "softmax_max_subtraction",
    "online_softmax_rescale",
    "fp32_upcast_load",
    "dot_ieee",
    "mask_centered",
    "affine_weight_bias",
    "row_times_stride",
    "k_loop_advance",
    "k_loop_tail",
    "softplus_threshold",
    "output_dtype",
    "conv_output_size",
    "constructor_constant",
    "silu_beta",
]


@pytest.mark.parametrize("rule_id", ONE_WAY)
def test_rule_leaves_its_own_fix_alone(rule_id: str) -> None:
    fixed = propose(kernel(NEW_RULE_KERNELS[rule_id]), [rule_id], LEAKY_CONTEXT)[0].source
    assert [r.source for r in propose(fixed, [rule_id], LEAKY_CONTEXT)] == []


@pytest.mark.parametrize(
    "rule_id",
    [
        "variance_bias",
        "scan_exclusive",
        "stride_index",
        "reduction_axis",
        "bias_broadcast_axis",
        "program_id_swap",
        "mask_offsets",
    ],
)
def test_two_way_rules_undo_themselves(rule_id: str) -> None:
    source = kernel(NEW_RULE_KERNELS[rule_id])
    fixed = propose(source, [rule_id], LEAKY_CONTEXT)[0].source
    assert source in [r.source for r in propose(fixed, [rule_id], LEAKY_CONTEXT)]


@pytest.mark.parametrize(
    "rule_id",
    sorted(
        set(NEW_RULE_KERNELS)
        - {"output_dtype", "loss_mean_count", "conv_output_size", "stride_args_swap", "stride_index"}
    ),
)
def test_kernel_rules_leave_a_plain_copy_kernel_alone(rule_id: str) -> None:
    plain = kernel("""
        @triton.jit
        def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    """)
    assert propose(plain, [rule_id], LEAKY_CONTEXT) == []


def test_context_reads_constructor_arguments_without_running_the_reference() -> None:
    assert LEAKY_CONTEXT.init_args == (0.2,)
    assert LEAKY_CONTEXT.init_params() == {"negative_slope": 0.2}
    # Without the reference's constructor arguments the constant rule has nothing to go on.
    source = kernel(NEW_RULE_KERNELS["constructor_constant"])
    assert propose(source, ["constructor_constant"]) == []


def test_gelu_follows_the_reference_approximation() -> None:
    source = kernel(NEW_RULE_KERNELS["gelu_form"])
    exact = RuleContext("y = torch.nn.functional.gelu(x)")
    assert propose(source, ["gelu_form"], exact) == []  # already the erf form the reference uses
    tanh = RuleContext('y = torch.nn.functional.gelu(x, approximate="tanh")')
    fixed = propose(source, ["gelu_form"], tanh)[0].source
    back = propose(fixed, ["gelu_form"], exact)
    assert [only_change(fixed, back[0].source)[2]] == [
        ["    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))\n"]
    ]


def test_softplus_threshold_comes_from_the_reference() -> None:
    source = kernel(NEW_RULE_KERNELS["softplus_threshold"])
    ctx = RuleContext("y = torch.nn.functional.softplus(x, beta=1, threshold=10)")
    (rw,) = propose(source, ["softplus_threshold"], ctx)
    assert "tl.where(x > 10.0, x," in rw.source


def test_count_include_pad_follows_the_reference() -> None:
    source = kernel(NEW_RULE_KERNELS["count_include_pad"])
    divided_by_area = propose(
        source, ["count_include_pad"], RuleContext("nn.AvgPool2d(3, count_include_pad=True)")
    )
    assert divided_by_area == []  # already the window area, as the reference asks
    excluded = RuleContext("nn.AvgPool2d(3, count_include_pad=False)")
    (rw,) = propose(source, ["count_include_pad"], excluded)
    assert "acc / count)" in rw.source


def test_affine_weight_the_wrapper_forgot_to_pass() -> None:
    source = kernel("""
        @triton.jit
        def norm(x_ptr, w_ptr, out_ptr, N, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            mask = cols < N
            w = tl.load(w_ptr + cols, mask=mask, other=1.0)
            tl.store(out_ptr + cols, tl.load(x_ptr + cols, mask=mask) * w, mask=mask)


        class ModelNew(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(n))

            def forward(self, x):
                out = torch.empty_like(x)
                norm[(1,)](x, None, out, x.shape[-1], BLOCK=128)
                return out
    """)
    (rw,) = propose(source, ["affine_weight_bias"])
    _, _, added = only_change(source, rw.source)
    assert added == ["        norm[(1,)](x, self.weight, out, x.shape[-1], BLOCK=128)\n"]


def test_k_loop_tail_extends_an_existing_row_mask_and_masks_both_operands() -> None:
    source = kernel("""
        @triton.jit
        def mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr):
            rm = tl.program_id(0) * BM + tl.arange(0, BM)
            rn = tl.program_id(1) * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k in range(0, K, BK):
                a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak, mask=rm[:, None] < M)
                b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn, mask=rn[None, :] < N)
                acc += tl.dot(a, b)
            tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
    """)
    rewrites = propose(source, ["k_loop_tail"])
    both = [rw for rw in rewrites if "all 2 loads" in rw.description]
    assert len(rewrites) == 3 and len(both) == 1
    assert "mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)" in both[0].source
    assert "mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)" in both[0].source
    already = both[0].source
    assert propose(already, ["k_loop_tail"]) == []  # K already masked: nothing to add


def test_k_loop_tail_rounds_a_floor_trip_count_up_together_with_the_masks() -> None:
    source = kernel("""
        @triton.jit
        def mm(a_ptr, b_ptr, c_ptr, K, sak, sbk, BK: tl.constexpr):
            rk = tl.arange(0, BK)
            acc = tl.zeros((1, 1), dtype=tl.float32)
            for k in range(0, K // BK):
                a = tl.load(a_ptr + (k * BK + rk)[None, :] * sak)
                b = tl.load(b_ptr + (k * BK + rk)[:, None] * sbk)
                acc += tl.dot(a, b)
            tl.store(c_ptr, acc)
    """)
    (joint,) = [rw for rw in propose(source, ["k_loop_tail"]) if "rounds up" in rw.description]
    assert "for k in range(0, tl.cdiv(K, BK)):" in joint.source
    assert joint.source.count("< K, other=0.0)") == 2


def test_k_loop_tail_follows_a_trip_count_assigned_to_a_name() -> None:
    source = kernel("""
        @triton.jit
        def mm(a_ptr, c_ptr, K, BK: tl.constexpr):
            rk = tl.arange(0, BK)
            n_tiles = K // BK
            acc = tl.zeros((BK,), dtype=tl.float32)
            for t in range(n_tiles):
                acc += tl.load(a_ptr + t * BK + rk)
            tl.store(c_ptr + rk, acc)
    """)
    rewrites = propose(source, ["k_loop_tail"])
    assert any("n_tiles = tl.cdiv(K, BK)\n" in rw.source for rw in rewrites)
    (joint,) = [rw for rw in rewrites if "rounds up" in rw.description]
    assert "n_tiles = tl.cdiv(K, BK)\n" in joint.source and "mask=rk < K - t * BK, other=0.0)" in joint.source


def test_store_mask_takes_the_load_mask_of_a_2d_tile() -> None:
    source = kernel("""
        @triton.jit
        def add2d(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
            rows = tl.program_id(0) * BM + tl.arange(0, BM)
            cols = tl.arange(0, BN)
            at = rows[:, None] * N + cols[None, :]
            x = tl.load(x_ptr + at, mask=(rows[:, None] < M) & (cols[None, :] < N))
            tl.store(out_ptr + at, x + 1.0, mask=rows[:, None] < M)
    """)
    (rw,) = propose(source, ["store_mask"])
    _, _, added = only_change(source, rw.source)
    assert added == ["    tl.store(out_ptr + at, x + 1.0, mask=(rows[:, None] < M) & (cols[None, :] < N))\n"]
    unmasked = source.replace(", mask=rows[:, None] < M)", ")")
    (rw,) = propose(unmasked, ["store_mask"])
    assert "x + 1.0, mask=(rows[:, None] < M) & (cols[None, :] < N))" in rw.source
