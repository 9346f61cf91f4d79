"""`findall` for the repair rules. libcst's own rebuilds every node it passes, and the rules ask hundreds of
questions of the same few trees: each tree is walked once, in the pre-order libcst's `findall` visits, with
its nodes indexed by class, and a question reads only the nodes of the classes its matcher can match."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import libcst as cst
import libcst.matchers as m

MAX_WALKS = 64
"""Walks kept (the rules' tree cache holds 8 sources; the edits' trees and sub-trees add more)."""

_LOCK = threading.Lock()


class _Walk(cst.CSTVisitor):
    """One tree's nodes in pre-order, each node's sub-tree as a slice of them, the positions of each class."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.by_class: dict[str, list[int]] = {}
        self.spans: list[tuple[cst.CSTNode, int, int]] = []
        self._starts: list[int] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._starts.append(len(self.nodes))
        self.by_class.setdefault(type(node).__name__, []).append(len(self.nodes))
        self.nodes.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.spans.append((original_node, self._starts.pop(), len(self.nodes)))


# Oldest walk first; id(node) -> (the walk holding it, its sub-tree's slice). A walk holds its nodes, so an id
# stays that node's for as long as the entry does.
_WALKS: OrderedDict[int, _Walk] = OrderedDict()
_SPANS: dict[int, tuple[_Walk, int, int]] = {}


def _span(tree: cst.CSTNode) -> tuple[_Walk, int, int]:
    span = _SPANS.get(id(tree))
    if span is not None and span[0].nodes[span[1]] is tree:
        with _LOCK:
            if id(span[0]) in _WALKS:
                _WALKS.move_to_end(id(span[0]))  # the trees in use stay; the oldest unused go first
        return span
    walk = _Walk()
    tree.visit(walk)
    with _LOCK:
        _WALKS[id(walk)] = walk
        for node, start, end in walk.spans:
            _SPANS[id(node)] = (walk, start, end)
        walk.spans = []
        while len(_WALKS) > MAX_WALKS:
            _, old = _WALKS.popitem(last=False)
            for node in old.nodes:
                if _SPANS.get(id(node), (None,))[0] is old:
                    del _SPANS[id(node)]
    return walk, 0, len(walk.nodes)


def _classes(matcher: Any) -> set[str] | None:
    """The node classes `matcher` can match (libcst compares class names first), or None: any."""
    if isinstance(matcher, m.OneOf | m.TypeOf):
        options = [_classes(option) for option in matcher.options]
        return None if any(o is None for o in options) else set().union(*options)  # type: ignore[arg-type]
    if isinstance(matcher, m.AllOf):
        known = [o for o in (_classes(option) for option in matcher.options) if o is not None]
        return set.intersection(*known) if known else None
    if isinstance(matcher, m.BaseMatcherNode) and hasattr(cst, type(matcher).__name__):
        return {type(matcher).__name__}
    return None


def findall(tree: Any, matcher: Any) -> Sequence[cst.CSTNode]:
    """What `libcst.matchers.findall(tree, matcher)` gives: the nodes of `tree` (itself first) that match,
    in pre-order."""
    if not isinstance(tree, cst.CSTNode) or isinstance(
        matcher, m.MatchIfTrue | m.MatchMetadata | m.MatchMetadataIfTrue | m.AtLeastN | m.AtMostN
    ):
        return m.findall(tree, matcher)
    walk, start, end = _span(tree)
    classes = _classes(matcher)
    if classes is None:
        at: Sequence[int] = range(start, end)
    else:
        at = []
        for name in classes:
            where = walk.by_class.get(name, [])
            at += where[bisect_left(where, start) : bisect_left(where, end)]
        if len(classes) > 1:
            at.sort()
    return [walk.nodes[i] for i in at if m.matches(walk.nodes[i], matcher)]
