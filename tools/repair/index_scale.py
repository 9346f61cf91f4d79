"""Index terms missing their scale (part of the edit space).

An index or address is a sum of terms, each an index times its stride: `oh * stride - pad + kh`,
`x_ptr + row * stride_xm + col`. A term written without its factor (`oh - pad + kh`, `x_ptr + row + col`)
reads the wrong element everywhere but at zero. The edit multiplies one index term of a sum by a scale the
kernel has: a parameter named as a stride or a dilation, or a name the kernel already multiplies another index
by (the H statement has its stride, the W statement lost it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _assignments,
    _calls,
    _expr,
    _flow_names,
    _names,
    _params,
    _program_id_names,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.conv_spec import _apply
from kernel_medic.tools.repair.rules.cst_find import findall

_CHAIN = (cst.Add, cst.Subtract)


def _leaves(op: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The terms of a sum or difference (not looking inside parentheses)."""
    if isinstance(op, cst.BinaryOperation) and isinstance(op.operator, _CHAIN) and not op.lpar:
        return _leaves(op.left) + _leaves(op.right)
    return [op]


def _index_sources(fn: cst.FunctionDef) -> set[str]:
    """Names an index starts from: program ids, `tl.arange` offsets and loop variables."""
    out = set(_program_id_names(fn))
    for targets, value in _assignments(fn.body):
        if _calls(value, "tl.arange"):
            out |= targets
    for loop in findall(fn.body, m.For()):
        assert isinstance(loop, cst.For)
        out |= _names(loop.target)
    return out


def _scales(fn: cst.FunctionDef, indices: set[str]) -> list[str]:
    """Stride and dilation parameters, and names some index is already multiplied by."""
    params = [p.name.value for p in _params(fn)]
    out = [p for p in params if "stride" in p.lower() or "dil" in p.lower()]
    for op in findall(fn.body, m.BinaryOperation(operator=m.Multiply())):
        assert isinstance(op, cst.BinaryOperation)
        for a, b in ((op.left, op.right), (op.right, op.left)):
            if isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value in indices:
                out += [b.value] if b.value in params else []
    # A size (a loop's extent, a mask's bound, a divisor that unflattens) flattens indices: not a lost scale.
    sizes = {n for c in findall(fn.body, m.Comparison()) for n in _names(c)}
    sizes |= {n for c in _calls(fn.body, "range", "tl.range", "tl.static_range") for n in _names(c)}
    for op in findall(fn.body, m.BinaryOperation(operator=m.FloorDivide() | m.Modulo())):
        assert isinstance(op, cst.BinaryOperation)
        sizes |= _names(op.right)
    return [n for n in dict.fromkeys(out) if n not in sizes or "stride" in n.lower() or "dil" in n.lower()]


@rule("edit_index_scale", title="an index term gains its stride", bug_class="edit:index_term", guarded=True)
def edit_index_scale(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`oh - pad + kh` -> `oh * stride - pad + kh`: one index term of a sum is multiplied by a scale."""
    sources = _index_sources(fn)
    flow = _flow_names(fn)
    params = {p.name.value for p in _params(fn)}
    indices = {n for n in _names(fn.body) if n not in params and flow.get(n, {n}) & sources}
    scales = _scales(fn, indices)
    if not scales:
        return
    chains: list[tuple[cst.BinaryOperation, list[cst.BaseExpression]]] = []
    for op in findall(fn.body, m.BinaryOperation()):
        assert isinstance(op, cst.BinaryOperation)
        parent = tree.parent(op)
        if not isinstance(op.operator, _CHAIN) or (
            isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _CHAIN) and not op.lpar
        ):
            continue  # one edit set per whole sum, at its top
        chains.append((op, _leaves(op)))
        present = _names(op)
        for term in chains[-1][1]:
            if not (isinstance(term, cst.Name) and term.value in indices):
                continue
            for scale in scales:
                if scale in present:
                    continue
                what = f"{fn.name.value}: {term.value} -> {term.value} * {scale} in {tree.code(op)}"
                yield tree.edit(term, _expr(f"{term.value} * {scale}"), what, tree.line(op))
    # Twins (`oh - pad + kh` and `ow - pad + kw`: the same sum over other indices) lose the scale together.
    twins: dict[str, list[tuple[cst.BinaryOperation, list[cst.BaseExpression]]]] = {}
    for op, terms in chains:
        shape = _render(op)
        for term in terms:
            if isinstance(term, cst.Name) and term.value in indices:
                shape = re.sub(rf"\b{re.escape(term.value)}\b", "#", shape)
        twins.setdefault(shape, []).append((op, terms))
    for group in twins.values():
        if len(group) < 2:
            continue
        for i, term in enumerate(group[0][1]):
            if not (isinstance(term, cst.Name) and term.value in indices):
                continue
            for scale in scales:
                if any(scale in _names(op) for op, _ in group):
                    continue
                mapping: dict[cst.CSTNode, cst.CSTNode] = {
                    terms[i]: _expr(f"{_render(terms[i])} * {scale}") for _, terms in group
                }
                what = f"{fn.name.value}: every {' / '.join(_render(t[i]) for _, t in group)} times {scale}"
                yield Edit(_apply(tree, replace=mapping), tree.line(group[0][0]), what)


@rule("edit_index_wrap", title="an index into a smaller operand wraps at a size or divides by one",
      bug_class="edit:index_term", guarded=True)  # fmt: skip
def edit_index_wrap(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A per-channel or per-row operand read at an index of the whole tensor: `w_ptr + pid` where `pid`
    counts (n, c) planes wants `pid % C`; per-row statistics at `offs` want `offs // N`. Each index term of a
    load's address is wrapped at, and divided by, each runtime size the kernel receives."""
    sources = _index_sources(fn)
    flow = _flow_names(fn)
    params = [p.name.value for p in _params(fn) if p.annotation is None]  # not a constexpr
    pointers = {p for p in params if "ptr" in p.lower()}
    # Sizes: what the kernel compares, loops to, (un)flattens or multiplies an index by, and a size it is
    # handed and never reads (the one the index forgot).
    used = {n for c in findall(fn.body, m.Comparison()) for n in _names(c)}
    used |= {n for c in _calls(fn.body, "range", "tl.range", "tl.static_range") for n in _names(c)}
    for op in findall(fn.body, m.BinaryOperation(operator=m.FloorDivide() | m.Modulo() | m.Multiply())):
        assert isinstance(op, cst.BinaryOperation)
        used |= _names(op.right) | (_names(op.left) if isinstance(op.operator, cst.Multiply) else set())
    read = _names(fn.body)
    sizes = [
        p
        for p in params
        if (p in used or p not in read)
        and not any(k in p.lower() for k in ("ptr", "stride", "eps", "scale", "alpha", "beta"))
    ]
    together: dict[tuple[str, str, str], list[cst.CSTNode]] = {}
    for load in _calls(fn.body, "tl.load"):
        if not load.args:
            continue
        address = load.args[0].value
        for term in _leaves(address):
            if not (isinstance(term, cst.Name) and flow.get(term.value, {term.value}) & sources):
                continue
            if flow.get(term.value, set()) & pointers:
                continue  # a pointer (`row_x = x_ptr + pid * HW`), not an index
            for size in sizes:
                if size in _names(address):
                    continue
                for op in ("%", "//"):
                    code = tree.code(address)
                    what = f"{fn.name.value}: {term.value} -> {term.value} {op} {size} in {code}"
                    yield tree.edit(term, _expr(f"({term.value} {op} {size})"), what, tree.line(load))
                    together.setdefault((term.value, op, size), []).append(term)
    # Weight and bias of one channel are read at the same wrong index: wrapped together.
    for (name, op, size), terms in together.items():
        if len(terms) > 1:
            mapping: dict[cst.CSTNode, cst.CSTNode] = {t: _expr(f"({name} {op} {size})") for t in terms}
            what = f"{fn.name.value}: every load at {name} reads at {name} {op} {size}"
            yield Edit(_apply(tree, replace=mapping), tree.line(terms[0]), what)


RULES = rules_of(__name__)
