"""The seed library: real examples (before fails, after passes), full coverage, and self-retrieval."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kernel_medic.tools.repair.rules.registry import RULES
from kernel_medic.vectordb.features import CATEGORIES, code_features, infer_category
from kernel_medic.vectordb.pattern import Pattern, load_seeds
from kernel_medic.vectordb.store import KnowledgeBase, RetrievalQuery

SEEDS = load_seeds()
# The taxonomy's classes (../shared/bug-taxonomy.md), as the seed files name them.
TAXONOMY = {
    "tail_mask",
    "neutral_element",
    "grid_coverage",
    "strides_layout",
    "k_loop",
    "accumulation_precision",
    "rounding_semantics",
    "numerical_stability",
    "normalisation",
    "operator_misread",
    "wrapper",
    "atomics_cross_program",
    "int32_overflow",
    "memory_aliasing",
    # crash classes (issue 18): kernels that fail before any output is judged
    "api_drift",
    "import_error",
    "wrapper_launch_error",
    "constexpr_or_power_of_2",
    "output_allocation",
}


def test_seed_library_covers_every_category_and_taxonomy_class() -> None:
    assert len(SEEDS) >= 40
    assert {c for p in SEEDS for c in p.categories} == set(CATEGORIES)
    assert {p.bug_class for p in SEEDS} == TAXONOMY
    for p in SEEDS:
        assert p.symptoms and p.explanation and p.fix, p.id
        assert p.example_before != p.example_after, p.id
        assert set(p.rules) <= set(RULES), p.id


def _evaluate(evaluator: Any, folder: Path, reference: str, candidate: str) -> Any:
    from kernel_medic.tools.evaluation.problem import load_problem

    folder.mkdir(parents=True)
    (folder / "reference.py").write_text(reference)
    (folder / "candidate.py").write_text(candidate)
    return evaluator.evaluate(load_problem(folder), "light")


def test_every_seed_example_fails_before_and_passes_after(evaluator: Any, tmp_path: Path) -> None:
    jobs = [(p, side) for p in SEEDS for side in ("before", "after")]

    def run(job: tuple[Pattern, str]) -> tuple[str, str, str]:
        p, side = job
        source = p.example_before if side == "before" else p.example_after
        report = _evaluate(evaluator, tmp_path / p.id / side, p.reference, source)
        return p.id, side, report.verdict

    with ThreadPoolExecutor(2) as pool:  # the evaluator's two workers stay busy
        results = list(pool.map(run, jobs))
    wrong = [(pid, side, v) for pid, side, v in results if (v == "pass") != (side == "after")]
    assert wrong == []


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    kb = KnowledgeBase(tmp_path_factory.mktemp("kb"))
    assert kb.ensure_seeded() == len(SEEDS)
    return kb


def test_each_seed_is_retrieved_top3_by_its_own_symptoms(seeded: KnowledgeBase) -> None:
    missed = []
    for p in SEEDS:
        query = RetrievalQuery(
            text=p.title,
            symptoms=p.symptoms,
            category=infer_category(p.reference),
            code_features=code_features(p.example_before),
        )
        top = [hit.id for hit, _, _ in seeded.search(query, k=3)]
        if p.id not in top:
            missed.append((p.id, top))
    assert missed == []


def test_seeding_twice_adds_nothing(seeded: KnowledgeBase) -> None:
    assert seeded.ensure_seeded() == 0
    assert seeded.stats()["patterns"] == len(SEEDS)
