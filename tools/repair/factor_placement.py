"""A scale applied to the wrong part of a sum (part of the edit space).

`addcmul` is `x + value * t1 * t2`; a kernel writing `(x + t1 * t2) * value` or `x * value + t1 * t2` scales
the wrong thing. The edit moves a factor among the terms of the sum it touches: from the whole sum onto one
term, from one term onto another, or from one term onto the whole sum.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.missing_function import loaded_names
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _expr,
    _names,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

_SUM = (cst.Add, cst.Subtract)


def _scalar(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name | cst.Integer | cst.Float | cst.Attribute)


def _terms(op: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """(sign, term) of a sum, the first with sign '+'."""
    if isinstance(op, cst.BinaryOperation) and isinstance(op.operator, _SUM) and not op.lpar:
        sign = "+" if isinstance(op.operator, cst.Add) else "-"
        return [*_terms(op.left), (sign, op.right)]
    return [("+", op)]


def _join(terms: list[tuple[str, str]]) -> str:
    text = terms[0][1]
    for sign, term in terms[1:]:
        text += f" {sign} {term}"
    return text


def _wrap(term: cst.BaseExpression) -> str:
    text = _render(term)
    return f"({text})" if isinstance(term, cst.BinaryOperation) and isinstance(term.operator, _SUM) else text


@rule("edit_factor_placement", title="a scale moved within a sum", bug_class="edit:order", guarded=True)
def edit_factor_placement(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`(a + b) * s` -> `a + b * s` / `a * s + b`; `a * s + b` -> `a + b * s` / `(a + b) * s`: in sums of the
    kernel's data (what it loaded), not in its indices."""
    data = loaded_names(fn)
    for op in findall(fn.body, m.BinaryOperation(operator=m.Multiply())):
        assert isinstance(op, cst.BinaryOperation)
        for inner, scale in ((op.left, op.right), (op.right, op.left)):
            if not (
                _scalar(scale)
                and isinstance(inner, cst.BinaryOperation)
                and inner.lpar
                and _names(inner) & data
            ):
                continue
            terms = _terms(inner.with_changes(lpar=[], rpar=[]))
            if len(terms) < 2:
                continue
            s = _render(scale)
            for i in range(len(terms)):
                moved = [
                    (sign, f"{_wrap(t)} * {s}" if j == i else _wrap(t)) for j, (sign, t) in enumerate(terms)
                ]
                new = _join(moved)
                yield tree.edit(
                    op, _expr(f"({new})" if op.lpar else new), f"{fn.name.value}: {tree.code(op)} -> {new}"
                )
    for op in findall(fn.body, m.BinaryOperation()):
        assert isinstance(op, cst.BinaryOperation)
        parent = tree.parent(op)
        if not isinstance(op.operator, _SUM) or (
            isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _SUM) and not op.lpar
        ):
            continue
        if not _names(op) & data:
            continue
        terms = _terms(op.with_changes(lpar=[], rpar=[]))
        scaled = [
            i
            for i, (_, t) in enumerate(terms)
            if isinstance(t, cst.BinaryOperation)
            and isinstance(t.operator, cst.Multiply)
            and _scalar(t.right)
        ]
        if len(terms) < 2 or len(scaled) != 1:
            continue
        i = scaled[0]
        term = terms[i][1]
        assert isinstance(term, cst.BinaryOperation)
        s, rest = _render(term.right), term.left
        plain = [(sign, _wrap(rest) if j == i else _wrap(t)) for j, (sign, t) in enumerate(terms)]
        options = [f"({_join(plain)}) * {s}"]
        for k in range(len(terms)):
            if k != i:
                options.append(
                    _join(
                        [(sign, f"{text} * {s}" if j == k else text) for j, (sign, text) in enumerate(plain)]
                    )
                )
        for new in options:
            yield tree.edit(
                op, _expr(f"({new})" if op.lpar else new), f"{fn.name.value}: {tree.code(op)} -> {new}"
            )


RULES = rules_of(__name__)
