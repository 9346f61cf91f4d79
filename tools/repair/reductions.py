"""Reduction axes and arange extents (part of the edit space).

`tl.max(x)` over a tile of rows reduces the whole tile where the reference reduces each row; an axis of 0
where 1 was meant; a `tl.arange` sized by the wrong block. The edits set or flip a reduction's axis (keeping
the tile 2-D where a broadcast follows), every axis-less reduction of a kernel at once, and an arange's
extent to another block size of the kernel.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _arg,
    _calls,
    _constexpr_params,
    _dotted,
    _expr,
    _replace_many,
    rule,
    rules_of,
)


@rule("edit_reduction", title="reduction axis or arange extent", bug_class="edit:reduction", guarded=True)
def edit_reduction(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    reductions = ("tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin", "tl.cumsum", "tl.reduce")
    whole: list[cst.Call] = []  # reductions over the whole tile (no axis)
    for call in _calls(fn.body, *reductions):
        axis = _arg(call, "axis", 1)
        if axis is None:
            whole.append(call)
            for k in ("0", "1"):
                for keep in (False, True):
                    new = _with_axis(call, k, keep)
                    kept = ", keep_dims=True" if keep else ""
                    yield tree.edit(call, new, f"{fn.name.value}: {_dotted(call.func)}(..., axis={k}{kept})")
        elif isinstance(axis.value, cst.Integer):
            for k in ("0", "1"):
                if k != axis.value.value:
                    new = tree.replace(axis.value, axis.value.with_changes(value=k))
                    yield Edit(new, tree.line(call), f"{fn.name.value}: axis={k}")
    if len(whole) > 1:
        # A 2-D tile reduced as one block (softmax over the flattened tile instead of per row): every
        # reduction of the kernel goes per row (or column), kept 2-D so `x - x_max` still broadcasts.
        for k in ("0", "1"):
            mapping = {call: _with_axis(call, k, True) for call in whole if _dotted(call.func) != "tl.cumsum"}
            if len(mapping) > 1:
                what = f"{fn.name.value}: every whole-tile reduction per axis {k}, keep_dims=True"
                yield Edit(_replace_many(tree.module, mapping), tree.line(whole[0]), what)
    blocks = sorted(_constexpr_params(fn))
    for call in _calls(fn.body, "tl.arange"):
        stop = _arg(call, "end", 1)
        if stop is None or not isinstance(stop.value, cst.Name):
            continue
        for other in blocks:
            if other != stop.value.value:
                new = tree.replace(stop.value, cst.Name(other))
                yield Edit(new, tree.line(call), f"{fn.name.value}: tl.arange(0, {other})")


_EQ = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _with_axis(call: cst.Call, axis: str, keep_dims: bool) -> cst.Call:
    """`tl.max(x)` -> `tl.max(x, axis=1)` (`, keep_dims=True` too when asked)."""
    args = [*call.args[:1], cst.Arg(_expr(axis), keyword=cst.Name("axis"), equal=_EQ)]
    if keep_dims:
        args.append(cst.Arg(cst.Name("True"), keyword=cst.Name("keep_dims"), equal=_EQ))
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return call.with_changes(args=[a.with_changes(comma=comma) for a in args[:-1]] + [args[-1]])


RULES = rules_of(__name__)
