"""Generic mutations for bugs no rule names: small single-site edits, only where the diagnosis points.

They share the rules' `Rewrite` type (rule ids start with `mut_`) and the same guarantee: one site changes,
everything else stays byte-identical. Mutations are many and blind, so the search screens them cheaply first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    Rewrite,
    Rule,
    RuleContext,
    Tree,
    _arg,
    _calls,
    _constexpr_params,
    _expr,
    _kernels,
    _launches,
    _literal_value,
    _mask_names,
    _names,
    _params,
    _render,
    _swap,
    _tree,
    _with_kwarg,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

_FLIP = {cst.LessThan: cst.LessThanEqual, cst.LessThanEqual: cst.LessThan}
_FLIP.update({cst.GreaterThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.GreaterThan})


@rule(
    "mut_compare",
    title="comparison operator < <-> <=, > <-> >=",
    bug_class="mutation:compare",
    symptoms=(),
)
def mut_compare(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`<` <-> `<=`, `>` <-> `>=`, one comparison at a time."""
    for cmp in findall(fn.body, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        for i, target in enumerate(cmp.comparisons):
            flip = _FLIP.get(type(target.operator))
            if flip is None:
                continue
            op = target.operator
            new_op = flip(whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after)
            targets = list(cmp.comparisons)
            targets[i] = target.with_changes(operator=new_op)
            new_cmp = cmp.with_changes(comparisons=targets)
            what = f"{fn.name.value}: {tree.code(cmp)} -> {_render(new_cmp)}"
            yield tree.edit(cmp, new_cmp, what)


@rule(
    "mut_bound_pm1", title="bound or range stop ±1", bug_class="mutation:bound_pm1", symptoms=(), per="module"
)
def mut_bound_pm1(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """±1 on the bound of a comparison and on the stop of a `range`."""
    bounds: list[cst.BaseExpression] = []
    for fn in _kernels(tree.module):
        for cmp in findall(fn.body, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            bounds += [t.comparator for t in cmp.comparisons]
        for call in _calls(fn.body, "range", "tl.range"):
            positional = [a.value for a in call.args if a.keyword is None]
            if positional:
                bounds.append(positional[1] if len(positional) > 1 else positional[0])
    for bound in bounds:
        for delta in ("- 1", "+ 1"):
            grouped = bound if isinstance(bound, cst.Name | cst.Attribute | cst.Call | cst.Integer) else None
            code = f"{_render(grouped)} {delta}" if grouped is not None else f"({_render(bound)}) {delta}"
            yield tree.edit(bound, _expr(code), f"bound {tree.code(bound)} {delta}")


_BOUND_WORDS = {"min", "max", "lo", "hi", "low", "high", "lower", "upper", "minval", "maxval"}


def _kind(name: str) -> str | None:
    low = name.lower()
    if "stride" in low:
        return "stride"
    if "ptr" in low:
        return "pointer"
    # Range bounds (min_val/max_val, lo/hi) are easy to pass in the wrong order.
    return "bound" if set(low.split("_")) & _BOUND_WORDS else None


@rule(
    "mut_swap_args",
    title="swap two launch arguments of the same kind",
    bug_class="mutation:swap_args",
    symptoms=(),
    per="module",
)
def mut_swap_args(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Swap two launch arguments of the same kind (two strides, two pointers) by the kernel's signature."""
    kernels = {fn.name.value: [p.name.value for p in _params(fn)] for fn in _kernels(tree.module)}
    for call in _launches(tree.module):
        assert isinstance(call.func, cst.Subscript)
        params = kernels.get(_render(call.func.value))
        if params is None:
            continue
        positional = [i for i, a in enumerate(call.args) if a.keyword is None and not a.star]
        kinds = {i: _kind(params[n]) for n, i in enumerate(positional) if n < len(params)}
        for x in positional:
            for y in positional:
                if x < y and kinds.get(x) and kinds.get(x) == kinds.get(y):
                    a, b = call.args[x].value, call.args[y].value
                    what = f"launch: swap {tree.code(a)} and {tree.code(b)} ({kinds[x]}s)"
                    yield Edit(_swap(tree, call, x, y), tree.line(a), what)


@rule(
    "mut_literal",
    title="literal -> unused scalar parameter or constructor argument",
    bug_class="mutation:literal",
    symptoms=(),
)
def mut_literal(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A float literal in a kernel becomes an unused scalar parameter or a constructor argument's value."""
    values = [
        v
        for v in (context.init_params().values() if context is not None else [])
        if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool))
    ]
    used = _names(fn.body)
    scalars = [p.name.value for p in _params(fn) if p.name.value not in used and _kind(p.name.value) is None]
    scalars = [s for s in scalars if s not in _constexpr_params(fn)]
    for lit in findall(fn.body, m.Float()):
        assert isinstance(lit, cst.Float)
        current = _literal_value(lit)
        options = scalars + [repr(v) for v in values if float(v) != current]
        for option in dict.fromkeys(options):
            yield tree.edit(lit, _expr(option), f"{lit.value} -> {option}")


@rule(
    "mut_program_id",
    title="tl.program_id on another axis",
    bug_class="mutation:program_id",
    symptoms=(),
)
def mut_program_id(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    for call in _calls(fn.body, "tl.program_id"):
        axis = _arg(call, "axis", 0)
        if axis is None or not isinstance(axis.value, cst.Integer):
            continue
        for other in ("0", "1", "2"):
            if other != axis.value.value:
                what = f"{fn.name.value}: tl.program_id({other})"
                yield tree.edit(axis.value, axis.value.with_changes(value=other), what, tree.line(call))


@rule(
    "mut_add_mask",
    title="mask an unmasked load/store",
    bug_class="mutation:add_mask",
    symptoms=(),
)
def mut_add_mask(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Any unmasked load/store gets any of the kernel's masks; a masked store, any other of them (a store
    masked on its rows only, `mask=c_mask[:, None]`, writes a tile's padded columns past the row)."""
    for call in _calls(fn.body, "tl.load", "tl.store"):
        is_load = m.matches(call.func, m.Attribute(attr=m.Name("load")))
        current = _arg(call, "mask", 1 if is_load else 2)
        if current is not None:
            others = [] if is_load else [k for k in _mask_names(fn) if k != _render(current.value)]
            for mask in others:
                new = call.with_deep_changes(current, value=cst.Name(mask))
                yield tree.edit(call, new, f"{fn.name.value}: tl.store mask={mask}", tree.line(current))
            continue
        for mask in _mask_names(fn):
            new_call = _with_kwarg(call, "mask", mask)
            new = _with_kwarg(new_call, "other", "0.0") if is_load else new_call
            what = f"{fn.name.value}: mask={mask} on {'tl.load' if is_load else 'tl.store'}"
            yield tree.edit(call, new, what, tree.line(call.args[-1], end=True))


_OTHERS = ("0.0", '-float("inf")', 'float("inf")', "1.0")


@rule(
    "mut_load_other",
    title="another tl.load other=",
    bug_class="mutation:load_other",
    symptoms=(),
)
def mut_load_other(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    for load in _calls(fn.body, "tl.load"):
        if _arg(load, "mask", 1) is None:
            continue
        other = _arg(load, "other", 2)
        current = _render(other.value).replace("'", '"') if other is not None else None
        for value in _OTHERS:
            if value == current:
                continue
            what = f"{fn.name.value}: tl.load other={value}"
            if other is not None:
                yield tree.edit(other.value, _expr(value), what, tree.line(other))
            else:
                yield tree.edit(load, _with_kwarg(load, "other", value), what, tree.line(load, end=True))


# One bug class per mutation kind, so one kind's patch cap does not shut out the others.
MUTATIONS: dict[str, Rule] = {r.id: r for r in rules_of(__name__)}


def kernel_lines(source: str, names: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) lines of the named kernels."""
    return [(lo, hi) for name, lo, hi in _kernel_spans(source) if name in names]


def kernel_spans(source: str) -> list[tuple[int, int]]:
    """(first, last) lines of every kernel."""
    return [(lo, hi) for _, lo, hi in _kernel_spans(source)]


def _kernel_spans(source: str) -> list[tuple[str, int, int]]:
    tree = _tree(source)
    if tree is None:
        return []
    return [(fn.name.value, tree.line(fn), tree.line(fn, end=True)) for fn in _kernels(tree.module)]


def mutate(
    source: str,
    mutation_ids: Sequence[str] | None = None,
    lines: Sequence[tuple[int, int]] | None = None,
    kernels: Sequence[str] | None = None,
    context: RuleContext | None = None,
) -> list[Rewrite]:
    """Mutations inside the given line ranges / kernels (anywhere in the kernels when neither is given)."""
    ids = list(MUTATIONS) if mutation_ids is None else list(mutation_ids)
    unknown = [i for i in ids if i not in MUTATIONS]
    if unknown:
        raise ValueError(f"unknown mutation(s): {', '.join(unknown)}")
    ranges = list(lines or []) + (kernel_lines(source, kernels) if kernels else [])
    if (lines or kernels) and not ranges:
        return []  # the diagnosis points at code this source does not have
    seen, out = {source}, []
    for mutation_id in ids:
        for rewrite in MUTATIONS[mutation_id].apply(source, context):
            if ranges and not any(lo <= rewrite.line <= hi for lo, hi in ranges):
                continue
            if rewrite.source not in seen:
                seen.add(rewrite.source)
                out.append(rewrite)
    return out
