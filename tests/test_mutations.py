from __future__ import annotations

import textwrap
from difflib import SequenceMatcher

import pytest
from kernel_medic.tools.repair.mutations import MUTATIONS, kernel_lines, mutate
from kernel_medic.tools.repair.rules.base import RuleContext

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"

KERNEL = HEADER + textwrap.dedent("""
    @triton.jit
    def leaky(x_ptr, out_ptr, n, slope, stride_a, stride_b, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(out_ptr + offs, tl.where(x > 0, x, x * 0.01))


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            leaky[(1,)](x, out, x.numel(), 0.2, x.stride(0), out.stride(0), BLOCK=128)
            return out
""").lstrip("\n")


def changed(old: str, new: str) -> tuple[int, list[str]]:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    hunks = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    assert len(hunks) == 1 and hunks[0][0] == "replace" and hunks[0][2] - hunks[0][1] == 1, hunks
    return hunks[0][1] + 1, b[hunks[0][3] : hunks[0][4]]


EXPECTED = {
    "mut_compare": "    mask = offs <= n\n",
    "mut_bound_pm1": "    mask = offs < n - 1\n",
    "mut_swap_args": "        leaky[(1,)](out, x, x.numel(), 0.2, x.stride(0), out.stride(0), BLOCK=128)\n",
    "mut_literal": "    tl.store(out_ptr + offs, tl.where(x > 0, x, x * slope))\n",
    "mut_program_id": "    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)\n",
    "mut_add_mask": "    tl.store(out_ptr + offs, tl.where(x > 0, x, x * 0.01), mask=mask)\n",
    "mut_load_other": '    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))\n',
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_mutation_changes_one_line(mutation: str) -> None:
    rewrites = mutate(KERNEL, [mutation])
    assert rewrites and all(r.rule == mutation for r in rewrites)
    for rw in rewrites:
        line, _ = changed(KERNEL, rw.source)
        assert rw.line == line
        compile(rw.source, "candidate.py", "exec")
    assert EXPECTED[mutation] in [changed(KERNEL, r.source)[1][0] for r in rewrites]


def test_swap_args_pairs_only_same_kind() -> None:
    swapped = {r.description for r in mutate(KERNEL, ["mut_swap_args"])}
    assert swapped == {
        "launch: swap x and out (pointers) (line 17)",
        "launch: swap x.stride(0) and out.stride(0) (strides) (line 17)",
    }


def test_literal_takes_constructor_values() -> None:
    ctx = RuleContext("class Model:\n    def __init__(self, negative_slope=0.01):\n        pass\n", (0.3,))
    options = [changed(KERNEL, r.source)[1][0] for r in mutate(KERNEL, ["mut_literal"], context=ctx)]
    assert "    tl.store(out_ptr + offs, tl.where(x > 0, x, x * 0.3))\n" in options


def test_mutations_stay_where_the_diagnosis_points() -> None:
    only_line_8 = mutate(KERNEL, lines=[(8, 8)])
    assert only_line_8 and {r.line for r in only_line_8} == {8}
    assert mutate(KERNEL, kernels=["no_such_kernel"]) == []
    (span,) = kernel_lines(KERNEL, ["leaky"])
    assert all(span[0] <= r.line <= span[1] for r in mutate(KERNEL, kernels=["leaky"]))


def test_nothing_to_mutate_outside_kernels() -> None:
    source = "import torch\n\n\ndef f(x):\n    return x < 1\n"
    assert mutate(source) == []
    with pytest.raises(ValueError, match="nope"):
        mutate(KERNEL, ["nope"])


def test_each_mutation_kind_is_its_own_hypothesis_so_patch_caps_apply_per_kind() -> None:
    classes = [rule.bug_class for rule in MUTATIONS.values()]
    assert len(set(classes)) == len(classes)
    assert all(c.startswith("mutation:") for c in classes)


def test_swap_args_swaps_range_bounds_passed_in_the_wrong_order() -> None:
    source = HEADER + textwrap.dedent("""
        @triton.jit
        def clamp_kernel(x_ptr, out_ptr, n, min_val, max_val, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, min_val), max_val), mask=offs < n)


        class ModelNew(torch.nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                clamp_kernel[(1,)](x, out, x.numel(), self.max_val, self.min_val, BLOCK=128)
                return out
    """).lstrip("\n")
    options = [changed(source, r.source)[1][0] for r in mutate(source, ["mut_swap_args"])]
    assert "        clamp_kernel[(1,)](x, out, x.numel(), self.min_val, self.max_val, BLOCK=128)\n" in options
    # n is neither a pointer nor a bound: it never trades places with one.
    assert not any(
        "x.numel(), self.min_val, self.max_val" not in o and "self.max_val, x.numel()" in o for o in options
    )


ROWS_ONLY_STORE = textwrap.dedent("""
    import triton
    import triton.language as tl


    @triton.jit
    def col_softmax(inp_ptr, out_ptr, C, L, BLOCK_C: tl.constexpr, BLOCK_L: tl.constexpr):
        c = tl.arange(0, BLOCK_C)
        l_idx = tl.program_id(0) * BLOCK_L + tl.arange(0, BLOCK_L)
        c_mask = c < C
        tile_mask = c_mask[:, None] & (l_idx[None, :] < L)
        x = tl.load(inp_ptr + c[:, None] * L + l_idx[None, :], mask=tile_mask, other=-float("inf"))
        p = tl.exp(x - tl.max(x, axis=0)[None, :])
        p = p / tl.sum(p, axis=0)[None, :]
        tl.store(out_ptr + c[:, None] * L + l_idx[None, :], p, mask=c_mask[:, None])
""")


def test_a_masked_store_may_take_another_of_the_kernels_masks() -> None:
    # Masked on its rows only, the last column block writes past the row into the next one.
    found = {rw.description: rw.source for rw in MUTATIONS["mut_add_mask"].apply(ROWS_ONLY_STORE)}
    fixed = found["col_softmax: tl.store mask=tile_mask (line 15)"]
    assert "l_idx[None, :], p, mask=tile_mask)" in fixed
    assert not any("tl.load" in d for d in found)  # a masked load keeps its mask (mut_load_other's lanes)
