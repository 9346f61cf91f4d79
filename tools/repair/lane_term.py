"""A load that reads one element where it should read a row (part of the edit space).

`mean = tl.load(mean_ptr)` beside `x = tl.load(x_ptr + row * stride + cols, mask=mask)`: a per-channel
parameter (a running mean, a weight vector) read as a scalar, so every lane gets element 0. The address
never reaches the lanes (`tl.arange`), while another load or store of the kernel indexes by them. The edit
adds a lane index another access adds to its pointer (a lane name or an inline `tl.arange`), with that
access's mask; one load at a time, then every such load at once (a batch norm reads its mean and its
variance the same way).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _arg,
    _assignments,
    _calls,
    _expr,
    _flow_names,
    _names,
    _render,
    _replace_many,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.variables import _read_names


def _lanes(fn: cst.FunctionDef) -> set[str]:
    """Names holding lanes: assigned from an expression with `tl.arange`, or computed from such names."""
    flow = _flow_names(fn)
    direct = {t for targets, value in _assignments(fn.body) if _calls(value, "tl.arange") for t in targets}
    return direct | {name for name, sources in flow.items() if sources & direct}


def _terms(address: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The terms of a sum (not looking inside parentheses)."""
    sums = isinstance(address, cst.BinaryOperation) and isinstance(address.operator, cst.Add)
    if sums and not address.lpar:
        assert isinstance(address, cst.BinaryOperation)
        return _terms(address.left) + _terms(address.right)
    return [address]


def _lane_terms(
    fn: cst.FunctionDef, accesses: list[cst.Call], lanes: set[str]
) -> list[tuple[str, cst.BaseExpression | None]]:
    """(term, its mask) for every lane index some access adds to its pointer as a term of its own: a lane name
    (`ptr + cols`) or an inline `tl.arange(...)`; never the pointer (the first term) itself."""
    out: dict[str, cst.BaseExpression | None] = {}
    for call in accesses:
        if not call.args:
            continue
        mask = _arg(call, "mask", 1)
        for term in _terms(call.args[0].value)[1:]:
            if (isinstance(term, cst.Name) and term.value in lanes) or (
                isinstance(term, cst.Call) and _calls(term, "tl.arange")
            ):
                text = _render(term)
                if out.get(text) is None:
                    out[text] = mask.value if mask is not None else None
    return list(out.items())


@rule("edit_lane_term", title="a scalar load reads a row", bug_class="edit:index", guarded=True)
def edit_lane_term(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    lanes = _lanes(fn)
    accesses = _calls(fn.body, "tl.load", "tl.store")
    terms = _lane_terms(fn, accesses, lanes)
    if not terms:
        return
    flow = _flow_names(fn)
    scalar_loads = []
    for call in _calls(fn.body, "tl.load"):
        if not call.args:
            continue
        reached = set().union(*(flow.get(n, {n}) for n in _names(call.args[0].value)))
        if not reached & lanes and not _calls(call.args[0].value, "tl.arange"):
            scalar_loads.append(call)
    for term, mask in terms:
        changed: dict[cst.CSTNode, cst.CSTNode] = {}
        for call in scalar_loads:
            address = call.args[0]
            args = [address.with_changes(value=_expr(f"{_render(address.value)} + {term}")), *call.args[1:]]
            if mask is not None and _arg(call, "mask", 1) is None:
                args[0] = args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                args.append(cst.Arg(mask, keyword=cst.Name("mask"), equal=_EQ))
            new = call.with_changes(args=args)
            changed[call] = new
            what = f"{fn.name.value}: {tree.code(call)} -> {_render(new)}"
            yield tree.edit(call, new, what)
        # At once: the loads of a bare pointer (`tl.load(mean_ptr)`), then every scalar load (a per-row scalar
        # such as `tl.load(scale_ptr + row)` may be meant).
        bare = {c: n for c, n in changed.items() if isinstance(c.args[0].value, cst.Name)}  # type: ignore[attr-defined]
        for group, kind in ((bare, "bare pointer"), (changed, "scalar")):
            if len(group) > 1 and (kind == "bare pointer" or len(group) > len(bare)):
                first = next(iter(group))
                what = f"{fn.name.value}: every {kind} load reads at + {term} ({len(group)} loads)"
                yield Edit(_replace_many(tree.module, group), tree.line(first), what)


@rule(
    "edit_global_lanes",
    title="a tile's own lanes where its global index was meant",
    bug_class="edit:index",
    guarded=True,
)
def edit_global_lanes(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`count = t + 1` -> `count = offs_l + 1` after `offs_l = l0 + t`: a loop over tiles builds each tile's
    global index from the lanes (`t = tl.arange(0, BLOCK)`), and a read of the bare lanes elsewhere restarts
    at 0 in every tile (a running count, a position, a causal bound). One read at a time."""
    assignments = _assignments(fn.body)
    lanes = {t for targets, value in assignments if m.matches(value, _ARANGE) for t in targets}
    globals_of: dict[str, list[tuple[str, cst.BaseExpression]]] = {}
    for targets, value in assignments:
        terms = _terms(value)
        if len(targets) != 1 or len(terms) < 2:
            continue
        for term in terms:
            if isinstance(term, cst.Name) and term.value in lanes:
                (target,) = targets
                globals_of.setdefault(term.value, []).append((target, value))
    for lane, defined in globals_of.items():
        own = {id(n) for _, value in defined for n in findall(value, m.Name())}
        for node in _read_names(fn.body):
            if node.value != lane or id(node) in own:
                continue
            for target, _ in defined:
                what = f"{fn.name.value}: {lane} -> {target} (its tile's global index)"
                yield tree.edit(node, cst.Name(target), what)


_ARANGE = m.Call(func=m.Attribute(value=m.Name("tl"), attr=m.Name("arange")))
_EQ = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))

RULES = rules_of(__name__)
