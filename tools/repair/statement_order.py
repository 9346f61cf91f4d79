"""Two updates of one value in the wrong order (part of the edit space).

`acc = tl.maximum(acc, 0.0)` before `acc = acc + bias` is a ReLU applied before the bias the reference adds
first; a scale before a shift, a clamp before a rounding: one value updated twice, the updates swapped. The
edit moves one update past the other when nothing between them touches the value or what the moved update
reads.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _assignments,
    _names,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall


def _updated(stmt: cst.BaseStatement) -> str | None:
    """`t` when the statement is `t = f(t, ...)` or `t op= ...`."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    small = stmt.body[0]
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        return small.target.value
    if (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
    ):
        name = small.targets[0].target.value
        return name if name in _names(small.value) else None
    return None


def _written(stmt: cst.BaseStatement) -> set[str]:
    return set().union(*(targets for targets, _ in _assignments(stmt))) if _assignments(stmt) else set()


@rule("edit_statement_order", title="two updates of one value swapped", bug_class="edit:order", guarded=True)
def edit_statement_order(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`t = f(t)` ... `t = g(t)` -> `t = g(t)` ... `t = f(t)` (the first moved after the second, or the
    second before the first), when the statements between neither touch `t` nor change what the moved
    update reads."""
    for block in findall(fn.body, m.IndentedBlock()):
        assert isinstance(block, cst.IndentedBlock)
        body = list(block.body)
        for i, first in enumerate(body):
            name = _updated(first)
            if name is None:
                continue
            for j in range(i + 1, len(body)):
                between = body[i + 1 : j]
                if any(name in _names(s) or name in _written(s) for s in between):
                    break
                if _updated(body[j]) != name:
                    continue
                written = set().union(*(_written(s) for s in between)) if between else set()
                moves = []
                if not (_names(first) - {name}) & written:
                    moves.append(("after", [*body[:i], *between, body[j], first, *body[j + 1 :]]))
                if not (_names(body[j]) - {name}) & written and between:
                    moves.append(("before", [*body[:i], body[j], first, *between, *body[j + 1 :]]))
                one, two = tree.code(first).strip(), tree.code(body[j]).strip()
                for where, new_body in moves:
                    moved = f"{one} moved after {two}" if where == "after" else f"{two} moved before {one}"
                    what = f"{fn.name.value}: {moved}"
                    new = block.with_changes(body=new_body)
                    yield tree.edit(block, new, what, tree.line(first), also=(tree.line(body[j]),))
                break


RULES = rules_of(__name__)
