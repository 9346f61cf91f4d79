"""Edits made by splicing the new node's text give exactly the code a whole-tree replace gives."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from kernel_medic.tools.repair.edit_space import EDITS
from kernel_medic.tools.repair.mutations import MUTATIONS
from kernel_medic.tools.repair.rules import base
from kernel_medic.tools.repair.rules.base import RuleContext, Tree
from kernel_medic.tools.repair.rules.registry import RULES
from kernel_medic.tools.repair.rules.splice import Splicer

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    ROOT / "examples" / "softmax_tail" / "candidate.py",
    *sorted((ROOT / "benchmarks" / "near_miss").glob("*/candidate.py"))[:6],
]

NESTED = '''import torch

def f(x, y):
    if x:
        for i in range(3):
            z = g(x,
                  y)  # a call over two lines
    return (x +
            y)'''  # no trailing newline: the last statement's newline is not in the text


def test_every_rule_edit_spliced_equals_the_whole_tree_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = 0
    original = Tree.spliced

    def both(tree: Tree, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module | str:
        nonlocal checked
        got = original(tree, old, new)
        whole = tree.replace(old, new).code
        assert (got if isinstance(got, str) else got.code) == whole
        checked += isinstance(got, str)
        return got

    monkeypatch.setattr(base.Tree, "spliced", both)
    rules = {**RULES, **EDITS, **MUTATIONS}
    for path in SOURCES:
        reference = path.with_name("reference.py")
        context = RuleContext.from_reference(reference.read_text() if reference.exists() else "")
        for item in rules.values():
            try:
                item.apply(path.read_text(), context)
            except Exception:  # a rule that cannot read this source proposes nothing; not what is tested
                continue
    assert checked > 300  # the splice, not the fallback, made most of them


def test_splice_keeps_indentation_of_nested_and_continued_lines() -> None:
    tree = Tree(NESTED)
    call = next(n for n in _walk(tree.module) if isinstance(n, cst.Call) and tree.code(n).startswith("g("))
    new = call.with_changes(args=[call.args[1].with_changes(comma=call.args[0].comma), call.args[0]])
    assert Splicer(tree.module).replace(call, new) == tree.replace(call, new).code
    ret = next(
        n for n in _walk(tree.module) if isinstance(n, cst.SimpleStatementLine) and "return" in tree.code(n)
    )
    # The file's last line has no newline of its own: no exact splice, so the whole tree is rendered.
    assert Splicer(tree.module).replace(ret, cst.parse_statement("return x\n")) is None
    assert tree.spliced(ret, cst.parse_statement("return x\n")).code.endswith("return x")


def test_a_node_its_parent_renders_with_a_default_comma_is_not_spliced() -> None:
    tree = Tree("f(a, b)\n")
    call = next(n for n in _walk(tree.module) if isinstance(n, cst.Call))
    assert Splicer(tree.module).replace(call.args[0], cst.Arg(cst.Name("c"))) is None
    assert tree.spliced(call.args[0], cst.Arg(cst.Name("c"))).code == "f(c, b)\n"


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    return [node, *(x for child in node.children for x in _walk(child))]
