"""A statement that reads a value from before the step meant to transform it (part of the edit space).

`hinge = tl.where(d > 0, d, 0.0)` then `hinge = d * d`: the square reads `d` where the clamped `hinge` was
meant, and the clamp's value is overwritten unread. A value computed and never read before it is
overwritten (or never read at all) is the trace of a forgotten step; the statements up to its overwrite
that read one of the names it was computed from read those names where the new value was meant. The edit
reads the new value instead, every read of that name in the statement at once (`d * d` -> `hinge * hinge`).
A value that is read later may still have been meant earlier: `act = f(x)`, then `keep = x > t`, then a
store of `where(keep, act, 0)` tests the data from before the transform; for data (values computed from
loads) the statements between the step and its first read are candidates too.
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
    _assignments,
    _names,
    _replace_many,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.variables import _MODULES, _read_names

_LOOKAHEAD = 6
"""Statements after a value never read at all that may have meant it."""


def _target(stmt: cst.SimpleStatementLine) -> tuple[str, cst.BaseExpression] | None:
    """(name, value) of a statement that is one plain assignment to one name."""
    if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value, assign.value


@rule(
    "edit_stale_read",
    title="a statement reads a value from before the step meant to transform it",
    bug_class="edit:variable",
    guarded=True,
)
def edit_stale_read(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    stmts = [s for s in findall(fn.body, m.SimpleStatementLine()) if isinstance(s, cst.SimpleStatementLine)]
    read_nodes = [_read_names(s) for s in stmts]
    reads = [{n.value for n in nodes} for nodes in read_nodes]
    writes = [set().union(*(targets for targets, _ in _assignments(s))) for s in stmts]
    calls = [c for c in findall(fn.body, m.Call()) if isinstance(c, cst.Call)]
    called = {c.func.value for c in calls if isinstance(c.func, cst.Name)}
    data = loaded_names(fn)
    for i, stmt in enumerate(stmts):
        found = _target(stmt)
        if found is None:
            continue
        new, value = found
        sources = _names(value) - {new} - _MODULES - called
        if not sources:
            continue
        # The next statement that mentions the new value: an overwrite that does not read it leaves the
        # value unread on this path; no mention at all leaves it unread everywhere.
        later = next((j for j in range(i + 1, len(stmts)) if new in reads[j] | writes[j]), None)
        if later is None:
            window = range(i + 1, min(len(stmts), i + 1 + _LOOKAHEAD))
        elif new not in reads[later]:
            window = range(i + 1, later + 1)
        elif new in data:
            # Read later, but meant before that; only data stands for data (index math between is not stale).
            window, sources = range(i + 1, later), sources & data
        else:
            continue
        for j in window:
            for old in sorted(sources & reads[j]):
                nodes = [n for n in read_nodes[j] if n.value == old]
                what = f"{fn.name.value}: {old} -> {new} (the value line {tree.line(stmt)} computed from it)"
                yield Edit(
                    _replace_many(tree.module, {n: cst.Name(new) for n in nodes}), tree.line(stmts[j]), what
                )


RULES = rules_of(__name__)
