"""Several edits to one kernel composed in a single pass, and the places they go.

A rule whose fix touches more than one node (a running max and the sum it rescales, a count beside the sum it
divides) rebuilds each from the updated tree, so nested edits compose, and inserts statements before or
after block statements found by identity in the original tree.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from kernel_medic.tools.repair.rules.base import Tree

_Build = Callable[[cst.CSTNode], cst.CSTNode]


class _Edit(cst.CSTTransformer):
    """Several edits in one pass: node rebuilds (from the updated node, so nested edits compose) and
    statements inserted before or after a block statement (found by identity in the original tree)."""

    def __init__(
        self,
        rebuild: dict[cst.CSTNode, _Build],
        before: dict[cst.CSTNode, list[str]] | None = None,
        after: dict[cst.CSTNode, list[str]] | None = None,
        drop: set[cst.CSTNode] | None = None,
    ) -> None:
        self.rebuild = rebuild
        self.before = before or {}
        self.after = after or {}
        self.drop = drop or set()

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        build = self.rebuild.get(original_node)
        new = build(updated_node) if build is not None else updated_node
        if isinstance(original_node, cst.IndentedBlock | cst.Module):
            body: list[cst.CSTNode] = []
            for old, upd in zip(original_node.body, new.body, strict=True):  # type: ignore[attr-defined]
                body += [cst.parse_statement(s + "\n") for s in self.before.get(old, [])]
                if old not in self.drop:
                    body.append(upd)
                body += [cst.parse_statement(s + "\n") for s in self.after.get(old, [])]
            new = new.with_changes(body=body)
        return new


def _edit(
    tree: Tree,
    rebuild: dict[cst.CSTNode, _Build],
    before: dict[cst.CSTNode, list[str]] | None = None,
    after: dict[cst.CSTNode, list[str]] | None = None,
    drop: set[cst.CSTNode] | None = None,
) -> cst.Module:
    return tree.module.visit(_Edit(rebuild, before, after, drop))  # type: ignore[return-value]


def _statement(tree: Tree, node: cst.CSTNode) -> cst.CSTNode | None:
    """The statement of a block (loop body, function body) that holds `node`."""
    stmt: cst.CSTNode | None = node
    while stmt is not None and not isinstance(tree.parent(stmt), cst.IndentedBlock | cst.Module):
        stmt = tree.parent(stmt)
    return stmt


def _ancestors(tree: Tree, node: cst.CSTNode) -> list[cst.CSTNode]:
    out, parent = [], tree.parent(node)
    while parent is not None:
        out.append(parent)
        parent = tree.parent(parent)
    return out


def _wrapped(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
