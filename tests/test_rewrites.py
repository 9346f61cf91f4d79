from __future__ import annotations

import textwrap
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from kernel_medic.tools.rewrites import RULES, Rewrite, propose, rank_rules

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


def test_cdiv_and_ceiling_division_grids_are_untouched() -> None:
    assert by_rule(FLOOR_GRID.replace("(n // 128,)", "(triton.cdiv(n, 128),)"), "grid_cdiv") == []
    assert by_rule(FLOOR_GRID.replace("(n // 128,)", "((n + 128 - 1) // 128,)"), "grid_cdiv") == []


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
    assert rules_seen == set(RULES)


def test_propose_orders_by_rule_and_filters_rules() -> None:
    source = (REPO / "examples/softmax_tail/candidate.py").read_text()
    assert [r.rule for r in propose(source)] == ["neutral_other_max", "contiguous_inputs"]
    assert [r.rule for r in propose(source, ["contiguous_inputs"])] == ["contiguous_inputs"]
    assert propose(source, []) == []
    with pytest.raises(ValueError, match="no_such_rule"):
        propose(source, ["no_such_rule"])


def test_propose_deduplicates_identical_results() -> None:
    source = FORWARD.replace(", y: torch.Tensor", "")
    assert len(propose(source, ["contiguous_inputs", "contiguous_inputs"])) == 1


def test_propose_on_unparsable_text_is_empty() -> None:
    assert propose("def broken(:\n    return\n") == []
    assert propose("class ModelNew(\n") == []


def test_rank_rules_orders_by_matching_symptoms() -> None:
    assert rank_rules(["noncontig", "transposed"])[0] == "contiguous_inputs"
    assert rank_rules(["x100", "grows_with_magnitude"])[0] == "fp32_accumulator"
    ranked = rank_rules(["out_of_bounds_write", "tail_block", "garbage_region"])
    # mask_le_to_lt and store_mask both match all three: the tie keeps registry order.
    assert ranked[:2] == ["mask_le_to_lt", "store_mask"]
    assert sorted(ranked) == sorted(RULES)
    assert rank_rules([]) == list(RULES)
