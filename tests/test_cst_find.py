"""The rules' `findall` answers exactly what libcst's does (the same nodes, in the same order) on real
kernels, for sub-trees, for the edited trees the rules make and after its cache of walks has turned over."""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
import libcst.matchers as m
import pytest
from kernel_medic.tools.repair.rules import cst_find
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.search import candidates

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
KERNELS = [
    BENCHMARKS / "near_miss" / "matmul_01_k_advance_no_stride" / "candidate.py",
    BENCHMARKS / "holdout6" / "convolution_01_conv1d_dilated_padded" / "candidate.py",
    Path(__file__).resolve().parents[1] / "examples" / "softmax_tail" / "candidate.py",
]
MATCHERS = [
    m.Call(),
    m.Call(func=m.Attribute(value=m.Name("tl"), attr=m.Name("load"))),
    m.Name(),
    m.Name("mask") | m.Name("offs") | m.Attribute(),
    m.AllOf(m.BinaryOperation(), m.BinaryOperation(operator=m.Multiply())),
    m.Comparison() | m.BooleanOperation(),
    m.FunctionDef(),
    m.Module(),
    m.DoesNotMatch(m.Name()),
    m.SaveMatchedNode(m.Arg(keyword=m.Name("mask")), "arg"),
]


def _sources() -> list[str]:
    found = [p.read_text(encoding="utf-8") for p in KERNELS if p.is_file()]
    assert len(found) >= 2, "the kernels this test reads are gone"
    return found


@pytest.mark.parametrize("matcher", MATCHERS, ids=lambda x: type(x).__name__)
def test_findall_gives_what_libcst_gives_on_whole_trees_and_sub_trees(matcher: m.BaseMatcherNode) -> None:
    for source in _sources():
        module = cst.parse_module(source)
        assert findall(module, matcher) == m.findall(module, matcher)
        for fn in m.findall(module, m.FunctionDef()):
            assert isinstance(fn, cst.FunctionDef)
            for part in (fn, fn.body, fn.params, *fn.body.body):
                assert findall(part, matcher) == m.findall(part, matcher)


def test_edited_trees_share_nodes_with_their_original_and_still_answer_alike() -> None:
    source = _sources()[0]
    module = cst.parse_module(source)
    findall(module, m.Name())  # the original is walked first: the edit reuses its unchanged sub-trees
    call = findall(module, m.Call(func=m.Attribute(attr=m.Name("load"))))[0]
    edited = module.deep_replace(call, cst.parse_expression("tl.zeros((1,), tl.float32)"))
    assert isinstance(edited, cst.Module)
    for matcher in MATCHERS:
        assert findall(edited, matcher) == m.findall(edited, matcher)
        assert findall(module, matcher) == m.findall(module, matcher)


def test_answers_stay_right_after_the_walks_kept_turn_over() -> None:
    sources = _sources()
    first = cst.parse_module(sources[0])
    expected = m.findall(first, m.Call())
    assert findall(first, m.Call()) == expected
    for i in range(cst_find.MAX_WALKS + 5):  # more trees than the cache keeps: the first one is dropped
        findall(cst.parse_module(sources[1] + f"\nx = {i}\n"), m.Name())
    # Memory stays bounded: only the nodes of the walks kept are indexed.
    assert len(cst_find._WALKS) <= cst_find.MAX_WALKS
    assert len(cst_find._SPANS) <= sum(len(w.nodes) for w in cst_find._WALKS.values())
    assert findall(first, m.Call()) == expected
    stmt = first.body[-1]
    assert findall(stmt, m.Name()) == m.findall(stmt, m.Name())


def test_the_edit_space_is_the_same_with_either_findall(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rule and mutation reads trees through `findall`: the edits offered, in their order, must not
    depend on which one answers."""
    source = _sources()[0]
    reference = (KERNELS[0].parent / "reference.py").read_text(encoding="utf-8")
    context = RuleContext.from_reference(reference, None)
    fast = [(rw.rule, rw.line, rw.source) for rw in candidates(source, None, context, ranked_lines=[10, 12])]
    patched = 0
    for module in list(sys.modules.values()):
        if module is not cst_find and getattr(module, "findall", None) is cst_find.findall:
            monkeypatch.setattr(module, "findall", m.findall)
            patched += 1
    assert patched >= 20  # the rule modules and the edit space
    slow = [(rw.rule, rw.line, rw.source) for rw in candidates(source, None, context, ranked_lines=[10, 12])]
    assert len(fast) > 50 and fast == slow
