"""No false alarms on correct kernels, no misses on the negatives: benchmarks/correct and correct_negatives.

The correct kernels were written, and proven against a float64 reference, independently of the evaluator
(benchmarks/correct/README.md): each one is hard for a judge in a known way (rounding at large magnitudes,
long reductions and scans, power-of-2-only domains, contiguous-only addressing, mixed precision).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import load_problem

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _cases(corpus: str) -> list[str]:
    root = BENCHMARKS / corpus
    return sorted(p.name for p in root.iterdir() if (p / "candidate.py").is_file())


def test_the_correct_corpus_covers_every_trait() -> None:
    traits = {
        (BENCHMARKS / "correct" / c / "meta.toml").read_text().split('trait = "')[1].split('"')[0]
        for c in _cases("correct")
    }
    assert len(_cases("correct")) >= 20
    assert traits == {
        "large_magnitude_matmul",
        "long_reduction",
        "scan",
        "power_of_two_only",
        "contiguous_only",
        "mixed_precision",
    }


@pytest.mark.parametrize("name", _cases("correct"))
def test_a_correct_kernel_passes_the_full_tier(name: str, evaluator: Evaluator) -> None:
    report = evaluator.evaluate(load_problem(BENCHMARKS / "correct" / name), tier="full")
    failing = {c.name: c.verdict for c in report.cases if c.counted and c.verdict != "pass"}
    assert report.verdict == "pass", (failing, report.symptoms[:3])


@pytest.mark.parametrize("name", _cases("correct_negatives"))
def test_a_negative_that_passes_default_inputs_is_caught(name: str, evaluator: Evaluator) -> None:
    problem = load_problem(BENCHMARKS / "correct_negatives" / name)
    assert evaluator.evaluate(problem, tier="light").verdict == "pass"  # the bug hides on default inputs
    assert evaluator.evaluate(problem, tier="full").verdict == "mismatch"
