"""Verdicts a kernel engineer can trust: correct kernels pass, real bugs fail, on real kernels in the sandbox.

Each class of false alarm has a correct kernel that must pass and a control with a real bug that must fail:
rounding that grows with the computation (a long-K matmul at large magnitudes, a long exclusive scan), derived
shapes outside a kernel's domain (a power-of-2-only attention), layout assumptions (a contiguous-only kernel),
and one class of miss (a half-precision accumulator that overflows).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_medic.tools.evaluation.evaluate import EvalReport, Evaluator
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.integrity.gate import audit
from problems import write_problem
from verdict_problems import (
    ATTENTION_CANDIDATE,
    ATTENTION_REFERENCE,
    EXCLUSIVE_SCAN_CANDIDATE,
    EXCLUSIVE_SCAN_REFERENCE,
    HALF_MEAN_CANDIDATE,
    HALF_MEAN_REFERENCE,
    IN_PLACE_CANDIDATE,
    IN_PLACE_REFERENCE,
    MATMUL_CANDIDATE,
    MATMUL_DROPS_K_TAIL,
    MATMUL_REFERENCE,
    ROWSUM_CONTIGUOUS_ONLY,
    ROWSUM_REFERENCE,
)

KMEDIC = str(Path(sys.executable).parent / "kmedic")
# Seeds and value variants only: the shape variants are exercised by the attention tests.
VALUES_ONLY = 'seeds = [0, 1]\nautomatic_shapes = false\nnoncontiguous = "off"\n'


def full(evaluator: Evaluator, folder: Path) -> EvalReport:
    return evaluator.evaluate(load_problem(folder), tier="full")


def failing(report: EvalReport) -> set[str]:
    return {c.name for c in report.cases if c.verdict != "pass" and c.counted}


@pytest.mark.parametrize("scale", ["1.0", "100.0", "1e4"])
def test_a_correct_long_k_matmul_passes_at_every_magnitude(
    evaluator: Evaluator, tmp_path: Path, scale: str
) -> None:
    reference = MATMUL_REFERENCE.replace("SCALE", scale)
    report = full(evaluator, write_problem(tmp_path, MATMUL_CANDIDATE, reference, VALUES_ONLY))
    assert report.verdict == "pass", (failing(report), report.symptoms[:3])
    x100 = next(c for c in report.cases if c.name == "x100")
    # The bar grew with the computation: the reference's own rounding error was measured, not assumed.
    assert x100.tolerance["reference_error"] > 0 and x100.tolerance["profile"] == "strict"


def test_a_matmul_that_drops_the_k_tail_still_fails_at_large_magnitudes(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    reference = MATMUL_REFERENCE.replace("SCALE", "1e4").replace("K = 512", "K = 500")
    report = full(evaluator, write_problem(tmp_path, MATMUL_DROPS_K_TAIL, reference, VALUES_ONLY))
    assert report.verdict == "mismatch"
    assert {"seed0", "seed1", "x100"} <= failing(report)


def test_a_correct_long_exclusive_scan_passes_the_full_tier(evaluator: Evaluator, tmp_path: Path) -> None:
    report = full(evaluator, write_problem(tmp_path, EXCLUSIVE_SCAN_CANDIDATE, EXCLUSIVE_SCAN_REFERENCE))
    assert report.verdict == "pass", (failing(report), report.symptoms[:3])


def test_an_inclusive_scan_for_an_exclusive_one_still_fails(evaluator: Evaluator, tmp_path: Path) -> None:
    wrong = EXCLUSIVE_SCAN_CANDIDATE.replace("carry + inclusive - x", "carry + inclusive")
    report = full(evaluator, write_problem(tmp_path, wrong, EXCLUSIVE_SCAN_REFERENCE, VALUES_ONLY))
    assert report.verdict == "mismatch" and "seed0" in failing(report)


def test_a_derived_shape_outside_a_power_of_2_kernel_domain_is_a_note_not_a_failure(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    report = full(evaluator, write_problem(tmp_path, ATTENTION_CANDIDATE, ATTENTION_REFERENCE))
    outside = [c for c in report.cases if c.verdict == "outside_domain"]
    assert report.verdict == "pass", (failing(report), report.symptoms[:3])
    assert outside and all(not c.counted and "head_dim" in c.name for c in outside)
    assert any("outside the kernel's domain" in w for w in report.warnings)
    # The other constants are still varied, one at a time, inside the domain.
    assert any(c.name == "shape[seq=15]" and c.verdict == "pass" and c.counted for c in report.cases)


def test_a_user_declared_shape_outside_the_domain_is_still_a_failure(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    toml = 'seeds = [0]\nvalue_variants = false\nnoncontiguous = "off"\n[[input_sets]]\nhead_dim = 31\n'
    report = full(evaluator, write_problem(tmp_path, ATTENTION_CANDIDATE, ATTENTION_REFERENCE, toml))
    assert report.verdict == "compile_error"
    assert {c.name: c.verdict for c in report.cases}["shape[head_dim=31]"] == "compile_error"


def test_a_contiguous_only_kernel_passes_with_a_layout_warning(evaluator: Evaluator, tmp_path: Path) -> None:
    report = full(evaluator, write_problem(tmp_path, ROWSUM_CONTIGUOUS_ONLY, ROWSUM_REFERENCE))
    assert report.verdict == "pass", (failing(report), report.symptoms[:3])
    noncontig = next(c for c in report.cases if c.name == "noncontig")
    assert noncontig.verdict == "mismatch" and not noncontig.counted
    assert any("assumes contiguous input" in w for w in report.warnings)
    assert report.score == 1.0


def test_a_problem_that_requires_strided_inputs_fails_a_contiguous_only_kernel(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    toml = 'seeds = [0]\nvalue_variants = false\nautomatic_shapes = false\nnoncontiguous = "require"\n'
    report = full(evaluator, write_problem(tmp_path, ROWSUM_CONTIGUOUS_ONLY, ROWSUM_REFERENCE, toml))
    assert report.verdict == "mismatch" and failing(report) == {"noncontig"}


def test_a_half_precision_accumulator_that_overflows_is_caught(evaluator: Evaluator, tmp_path: Path) -> None:
    wrong = HALF_MEAN_CANDIDATE.replace("tl.ACC", "tl.float16")
    report = full(evaluator, write_problem(tmp_path, wrong, HALF_MEAN_REFERENCE))
    assert report.verdict == "mismatch"
    assert "large_positive" in failing(report)


def test_a_float32_accumulator_for_the_same_half_mean_passes(evaluator: Evaluator, tmp_path: Path) -> None:
    right = HALF_MEAN_CANDIDATE.replace("tl.ACC", "tl.float32")
    report = full(evaluator, write_problem(tmp_path, right, HALF_MEAN_REFERENCE))
    assert report.verdict == "pass", (failing(report), report.symptoms[:3])


def test_the_kernelbench_profile_is_kernelbench_s_rule(evaluator: Evaluator, tmp_path: Path) -> None:
    # 0.5% too large everywhere: outside our strict bar, inside KernelBench's allclose(atol=rtol=1e-2).
    off = MATMUL_CANDIDATE.replace("return c\n", "return c * 1.005\n")
    folder = write_problem(tmp_path, off, MATMUL_REFERENCE.replace("SCALE", "1.0"))
    strict = evaluator.evaluate(load_problem(folder), tier="full")
    kernelbench = evaluator.evaluate(load_problem(folder).with_tolerance("kernelbench"), tier="full")
    assert strict.verdict == "mismatch"
    assert kernelbench.verdict == "pass"
    assert [c.name for c in kernelbench.cases] == [f"seed{s}" for s in range(5)]
    assert {c.tolerance["profile"] for c in kernelbench.cases} == {"kernelbench"}
    assert {(c.tolerance["atol"], c.tolerance["rtol"]) for c in kernelbench.cases} == {(1e-2, 1e-2)}


def test_check_json_shows_each_case_s_tolerance_and_reference_error(tmp_path: Path) -> None:
    reference = MATMUL_REFERENCE.replace("SCALE", "100.0")
    folder = write_problem(tmp_path, MATMUL_CANDIDATE, reference, VALUES_ONLY)
    proc = subprocess.run(
        [KMEDIC, "check", str(folder), "--json", "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cases = json.loads(proc.stdout)["cases"]
    assert all(c["tolerance"]["profile"] == "strict" for c in cases)
    assert all(c["tolerance"]["reference_error"] is not None for c in cases)
    bad = subprocess.run(
        [KMEDIC, "check", str(folder), "--tolerance", "loose"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "tolerance" in bad.stderr


@pytest.mark.parametrize(
    ("candidate", "reference"),
    [(EXCLUSIVE_SCAN_CANDIDATE, EXCLUSIVE_SCAN_REFERENCE), (ATTENTION_CANDIDATE, ATTENTION_REFERENCE)],
    ids=["long_exclusive_scan", "power_of_2_attention"],
)
def test_the_integrity_gate_judges_by_the_same_bar(
    evaluator: Evaluator, tmp_path: Path, candidate: str, reference: str
) -> None:
    # Fresh random values and the held-back shape are judged like the evaluator's cases: the reference's own
    # rounding is allowed, and a derived shape outside the kernel's domain is a note, not a refusal.
    result = audit(load_problem(write_problem(tmp_path, candidate, reference)), evaluator)
    assert result.verdict == "clean", [f.to_dict() for f in result.findings]


def test_an_input_the_reference_updates_in_place_must_be_updated_the_same_way(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    honest = full(
        evaluator, write_problem(tmp_path / "honest", IN_PLACE_CANDIDATE, IN_PLACE_REFERENCE, VALUES_ONLY)
    )
    assert honest.verdict == "pass", (failing(honest), honest.symptoms[:3])
    assert audit(load_problem(tmp_path / "honest"), evaluator).verdict == "clean"

    skipped = IN_PLACE_CANDIDATE.replace("    tl.store(y_ptr + offs, x * 2.0, mask=mask)\n", "")
    report = full(evaluator, write_problem(tmp_path / "skipped", skipped, IN_PLACE_REFERENCE, VALUES_ONLY))
    assert report.verdict == "mismatch" and report.score == 1.0  # the output is right, the update missing
    assert "input_update_wrong:1" in report.cases[0].relationships

    wrong = IN_PLACE_CANDIDATE.replace("tl.store(y_ptr + offs, x * 2.0,", "tl.store(y_ptr + offs, x * 3.0,")
    report = full(evaluator, write_problem(tmp_path / "wrong", wrong, IN_PLACE_REFERENCE, VALUES_ONLY))
    assert report.verdict == "mismatch" and "input_update_wrong:1" in report.cases[0].relationships

    # The reference leaves x alone: writing into it is still a failure.
    clobbers = IN_PLACE_CANDIDATE.replace(
        "    tl.store(out_ptr", "    tl.store(x_ptr + offs, x * 0.0, mask=mask)\n    tl.store(out_ptr"
    )
    report = full(evaluator, write_problem(tmp_path / "clobbers", clobbers, IN_PLACE_REFERENCE, VALUES_ONLY))
    assert report.verdict == "mismatch" and "input_modified:0" in report.cases[0].relationships
