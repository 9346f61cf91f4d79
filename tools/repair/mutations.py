"""Generic mutations for bugs no rule names: small single-site edits, only where the diagnosis points.

They share the rules' `Rewrite` type (rule ids start with `mut_`) and the same guarantee: one site changes,
everything else stays byte-identical. Mutations are many and blind, so the search screens them cheaply first.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.core import (
    Rewrite,
    Rule,
    RuleContext,
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
    _rewrite,
    _swap,
    _tree,
    _with_kwarg,
)

_FLIP = {cst.LessThan: cst.LessThanEqual, cst.LessThanEqual: cst.LessThan}
_FLIP.update({cst.GreaterThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.GreaterThan})


def _mut_compare(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """`<` <-> `<=`, `>` <-> `>=`, one comparison at a time."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        for cmp in m.findall(fn.body, m.Comparison()):
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
                out.append(_rewrite("mut_compare", tree.replace(cmp, new_cmp), tree.line(cmp), what))
    return out


def _mut_bound_pm1(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """±1 on the bound of a comparison and on the stop of a `range`."""
    tree = _tree(source)
    if tree is None:
        return []
    bounds: list[cst.BaseExpression] = []
    for fn in _kernels(tree.module):
        for cmp in m.findall(fn.body, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            bounds += [t.comparator for t in cmp.comparisons]
        for call in _calls(fn.body, "range", "tl.range"):
            positional = [a.value for a in call.args if a.keyword is None]
            if positional:
                bounds.append(positional[1] if len(positional) > 1 else positional[0])
    out: list[Rewrite] = []
    for bound in bounds:
        for delta in ("- 1", "+ 1"):
            grouped = bound if isinstance(bound, cst.Name | cst.Attribute | cst.Call | cst.Integer) else None
            code = f"{_render(grouped)} {delta}" if grouped is not None else f"({_render(bound)}) {delta}"
            new = tree.replace(bound, _expr(code))
            out.append(_rewrite("mut_bound_pm1", new, tree.line(bound), f"bound {tree.code(bound)} {delta}"))
    return out


_BOUND_WORDS = {"min", "max", "lo", "hi", "low", "high", "lower", "upper", "minval", "maxval"}


def _kind(name: str) -> str | None:
    low = name.lower()
    if "stride" in low:
        return "stride"
    if "ptr" in low:
        return "pointer"
    # Range bounds (min_val/max_val, lo/hi) are easy to pass in the wrong order.
    return "bound" if set(low.split("_")) & _BOUND_WORDS else None


def _mut_swap_args(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Swap two launch arguments of the same kind (two strides, two pointers) by the kernel's signature."""
    tree = _tree(source)
    if tree is None:
        return []
    kernels = {fn.name.value: [p.name.value for p in _params(fn)] for fn in _kernels(tree.module)}
    out: list[Rewrite] = []
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
                    out.append(_rewrite("mut_swap_args", _swap(tree, call, x, y), tree.line(a), what))
    return out


def _mut_literal(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """A float literal in a kernel becomes an unused scalar parameter or a constructor argument's value."""
    tree = _tree(source)
    if tree is None:
        return []
    values = [
        v
        for v in (context.init_params().values() if context is not None else [])
        if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool))
    ]
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        used = _names(fn.body)
        scalars = [
            p.name.value for p in _params(fn) if p.name.value not in used and _kind(p.name.value) is None
        ]
        scalars = [s for s in scalars if s not in _constexpr_params(fn)]
        for lit in m.findall(fn.body, m.Float()):
            assert isinstance(lit, cst.Float)
            current = _literal_value(lit)
            options = scalars + [repr(v) for v in values if float(v) != current]
            for option in dict.fromkeys(options):
                new = tree.replace(lit, _expr(option))
                out.append(_rewrite("mut_literal", new, tree.line(lit), f"{lit.value} -> {option}"))
    return out


def _mut_program_id(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        for call in _calls(fn.body, "tl.program_id"):
            axis = _arg(call, "axis", 0)
            if axis is None or not isinstance(axis.value, cst.Integer):
                continue
            for other in ("0", "1", "2"):
                if other != axis.value.value:
                    new = tree.replace(axis.value, axis.value.with_changes(value=other))
                    what = f"{fn.name.value}: tl.program_id({other})"
                    out.append(_rewrite("mut_program_id", new, tree.line(call), what))
    return out


def _mut_add_mask(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Any unmasked load/store gets any of the kernel's masks."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        for call in _calls(fn.body, "tl.load", "tl.store"):
            is_load = m.matches(call.func, m.Attribute(attr=m.Name("load")))
            if _arg(call, "mask", 1 if is_load else 2) is not None:
                continue
            for mask in _mask_names(fn):
                new_call = _with_kwarg(call, "mask", mask)
                new = tree.replace(call, _with_kwarg(new_call, "other", "0.0") if is_load else new_call)
                what = f"{fn.name.value}: mask={mask} on {'tl.load' if is_load else 'tl.store'}"
                out.append(_rewrite("mut_add_mask", new, tree.line(call.args[-1], end=True), what))
    return out


_OTHERS = ("0.0", '-float("inf")', 'float("inf")', "1.0")


def _mut_load_other(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        for load in _calls(fn.body, "tl.load"):
            if _arg(load, "mask", 1) is None:
                continue
            other = _arg(load, "other", 2)
            current = _render(other.value).replace("'", '"') if other is not None else None
            for value in _OTHERS:
                if value == current:
                    continue
                if other is not None:
                    new, line = tree.replace(other.value, _expr(value)), tree.line(other)
                else:
                    new = tree.replace(load, _with_kwarg(load, "other", value))
                    line = tree.line(load, end=True)
                out.append(_rewrite("mut_load_other", new, line, f"{fn.name.value}: tl.load other={value}"))
    return out


def _rule(rule_id: str, title: str, apply: object) -> Rule:
    # One hypothesis per mutation kind, so one kind's patch cap does not shut out the others.
    return Rule(rule_id, title, f"mutation:{rule_id.removeprefix('mut_')}", (), apply)  # type: ignore[arg-type]


MUTATIONS: dict[str, Rule] = {
    r.id: r
    for r in (
        _rule("mut_compare", "comparison operator < <-> <=, > <-> >=", _mut_compare),
        _rule("mut_bound_pm1", "bound or range stop ±1", _mut_bound_pm1),
        _rule("mut_swap_args", "swap two launch arguments of the same kind", _mut_swap_args),
        _rule("mut_literal", "literal -> unused scalar parameter or constructor argument", _mut_literal),
        _rule("mut_program_id", "tl.program_id on another axis", _mut_program_id),
        _rule("mut_add_mask", "mask an unmasked load/store", _mut_add_mask),
        _rule("mut_load_other", "another tl.load other=", _mut_load_other),
    )
}


def kernel_lines(source: str, names: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) lines of the named kernels."""
    tree = _tree(source)
    if tree is None:
        return []
    return [
        (tree.line(fn), tree.line(fn, end=True)) for fn in _kernels(tree.module) if fn.name.value in names
    ]


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
