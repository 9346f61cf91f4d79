"""The evaluator end to end: real problems, real sandboxed workers, every verdict and coverage variant."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kernel_medic.tools.evaluation.evaluate import EvalReport, Evaluator
from kernel_medic.tools.evaluation.problem import InvalidProblem, load_problem
from problems import SCALE_REFERENCE, scale_candidate, write_problem


def evaluate(evaluator: Evaluator, folder: Path, tier: str = "light") -> EvalReport:
    return evaluator.evaluate(load_problem(folder), tier=tier)  # type: ignore[arg-type]


def test_correct_kernel_passes_every_full_tier_case(evaluator: Evaluator, tmp_path: Path) -> None:
    report = evaluate(evaluator, write_problem(tmp_path, scale_candidate()), tier="full")
    names = [c.name for c in report.cases]
    assert report.verdict == "pass", report.symptoms
    assert report.score == 1.0
    assert {"seed0", "seed1", "seed2", "x100", "x1e-3", "all_negative", "heavy_tailed", "noncontig"} <= set(
        names
    )
    shape_cases = [n for n in names if n.startswith("shape")]
    assert shape_cases, names
    json.dumps(report.to_dict())


def test_light_tier_runs_default_inputs_once(evaluator: Evaluator, tmp_path: Path) -> None:
    report = evaluate(evaluator, write_problem(tmp_path, scale_candidate()))
    assert [c.name for c in report.cases] == ["seed0"]
    assert report.verdict == "pass"


def test_unwritten_tail_is_a_mismatch_shown_as_untouched_trailing_region(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # `offs < n - 8`: the last 8 elements are never stored; the harness NaN-fills torch.empty_like outputs.
    cand = scale_candidate(("mask = offs < n\n", "mask = offs < n - 8\n"))
    report = evaluate(evaluator, write_problem(tmp_path, cand))
    case = report.cases[0]
    assert report.verdict == "mismatch"
    assert case.nan_count == 8
    assert case.pattern == "trailing"
    assert "untouched_region" in case.relationships
    assert report.score == pytest.approx(1 - 8 / 4000)


def test_an_unwritten_tail_of_a_strided_empty_like_is_nan_on_every_run(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # On the non-contiguous input, empty_like(x) keeps x's strides (a form the harness leaves to torch): its
    # unwritten elements must still be poisoned, not stale memory that changes the evidence from run to run.
    cand = scale_candidate(
        ("mask = offs < n\n", "mask = offs < n - 8\n"), ("        x = x.contiguous()\n", "")
    )
    folder = write_problem(tmp_path, cand)
    cases = [
        next(c for c in evaluate(evaluator, folder, tier="full").cases if c.name == "noncontig")
        for _ in range(2)
    ]
    assert [c.nan_count for c in cases] == [8, 8]
    assert cases[0].relationships == cases[1].relationships


def test_the_report_measures_the_work_of_the_candidates_kernels(evaluator: Evaluator, tmp_path: Path) -> None:
    # The search ranks correct edits by their cost; on the smallest case the seconds are all a worker's fixed
    # cost, the interpreted work is not: a program per element with 256 lanes each does far more.
    covering = evaluate(evaluator, write_problem(tmp_path / "a", scale_candidate()), tier="micro")
    per_element = scale_candidate(("triton.cdiv(n, 256)", "n"))
    wasteful = evaluate(evaluator, write_problem(tmp_path / "b", per_element), tier="micro")
    assert covering.verdict == wasteful.verdict == "pass"
    assert 0 < 16 * covering.work < wasteful.work
    assert covering.cpu_s > 0 and covering.work == sum(c.work for c in covering.cases)


def test_wrong_constant_is_a_mismatch_with_a_constant_ratio(evaluator: Evaluator, tmp_path: Path) -> None:
    report = evaluate(evaluator, write_problem(tmp_path, scale_candidate(("x * 2.0", "x * 3.0"))))
    assert report.verdict == "mismatch"
    assert report.cases[0].pattern == "everywhere"
    assert any(r.startswith("constant_ratio:1.5") for r in report.cases[0].relationships)
    assert report.score == 0.0


def test_shape_mismatch(evaluator: Evaluator, tmp_path: Path) -> None:
    report = evaluate(
        evaluator, write_problem(tmp_path, scale_candidate(("return out", "return out[:, :-1]")))
    )
    assert report.verdict == "shape_mismatch"
    assert report.score == 0.0


def test_dtype_mismatch(evaluator: Evaluator, tmp_path: Path) -> None:
    report = evaluate(
        evaluator, write_problem(tmp_path, scale_candidate(("return out", "return out.double()")))
    )
    assert report.verdict == "dtype_mismatch"


def test_exception_in_forward_is_a_runtime_error(evaluator: Evaluator, tmp_path: Path) -> None:
    cand = scale_candidate(("x = x.contiguous()", "x = x.contiguous()\n        x = x[None][3]"))
    report = evaluate(evaluator, write_problem(tmp_path, cand))
    assert report.verdict == "runtime_error"
    assert "IndexError" in (report.cases[0].error or "")


def test_triton_misuse_is_a_compile_error(evaluator: Evaluator, tmp_path: Path) -> None:
    cand = scale_candidate(("tl.arange(0, BLOCK)", "tl.arange(0, 100)"))  # not a power of two
    report = evaluate(evaluator, write_problem(tmp_path, cand))
    assert report.verdict == "compile_error", report.cases[0].error


def test_infinite_loop_is_a_timeout(evaluator: Evaluator, tmp_path: Path) -> None:
    cand = scale_candidate(("x = x.contiguous()", "while True:\n            pass"))
    report = evaluate(evaluator, write_problem(tmp_path, cand, toml="timeout_s = 3\n"))
    assert report.verdict == "timeout"


def test_screening_with_a_deadline_stops_running_cases_once_one_times_out(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # The repair search screens edits against a deadline: an edit that hangs costs one timeout per worker,
    # not one per case of the full tier (fourteen here).
    cand = scale_candidate(("x = x.contiguous()", "while True:\n            pass"))
    problem = load_problem(write_problem(tmp_path, cand, toml="timeout_s = 2\n"))
    report = evaluator.evaluate(problem, tier="full", deadline=time.monotonic() + 600)
    assert report.verdict == "timeout"
    ran = [c for c in report.cases if not (c.error or "").startswith("not run")]
    skipped = [c for c in report.cases if (c.error or "").startswith("not run: an earlier case timed out")]
    assert len(report.cases) >= 10 and len(ran) <= 2 * evaluator.pool.size  # those started before it ended
    assert len(skipped) == len(report.cases) - len(ran)
    assert all(c.verdict == "timeout" for c in report.cases)


def test_cases_queued_behind_a_slow_one_are_dropped_when_the_deadline_passes(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # The first case runs the model twice and its second run is slow; the other cases pass through the other
    # worker meanwhile. Past the deadline none of them may start: finalists once ran 40 s past it.
    slow_second_run = (
        "x = x.contiguous()",
        "self._runs = getattr(self, '_runs', 0) + 1\n"
        "        __import__('time').sleep(8.0 if self._runs == 2 else 0.5)\n"
        "        x = x.contiguous()",
    )
    problem = load_problem(write_problem(tmp_path, scale_candidate(slow_second_run), toml="timeout_s = 30\n"))
    report = evaluator.evaluate(problem, tier="full", deadline=time.monotonic() + 2.0)
    ran = [c for c in report.cases if not (c.error or "").startswith("not run")]
    dropped = [c for c in report.cases if (c.error or "").startswith("not run: out of screening time")]
    assert report.verdict == "timeout" and len(report.cases) >= 10
    assert ran[0].verdict == "pass"  # started before the deadline: judged, never cut
    # Before: every case the other worker could fit into the slow case's 8 s ran (about ten).
    assert len(ran) <= 6 and len(dropped) == len(report.cases) - len(ran)


def test_segfault_is_a_crash_and_the_pool_keeps_serving(evaluator: Evaluator, tmp_path: Path) -> None:
    cand = scale_candidate(("x = x.contiguous()", "import ctypes\n        ctypes.string_at(0)"))
    report = evaluate(evaluator, write_problem(tmp_path / "bad", cand))
    assert report.verdict == "crash"
    assert "SIGSEGV" in (report.cases[0].error or "")
    assert evaluate(evaluator, write_problem(tmp_path / "good", scale_candidate())).verdict == "pass"


def test_import_time_crash_is_a_compile_error_with_its_line(evaluator: Evaluator, tmp_path: Path) -> None:
    # The candidate's own failure is a crash verdict (repairable), not bad input: only the reference is that.
    cand = scale_candidate(("import triton\n", "import triton\nraise RuntimeError('boom at import')\n"))
    report = evaluate(evaluator, write_problem(tmp_path, cand))
    assert report.verdict == "compile_error"
    assert "import-time crash" in (report.error or "") and "boom at import" in (report.error or "")
    assert report.crash is not None and report.crash["class"] == "import_error"
    assert report.crash["line"] == 4 and report.crash["code"] == "raise RuntimeError('boom at import')"


def test_reference_that_fails_is_invalid_problem(evaluator: Evaluator, tmp_path: Path) -> None:
    ref = SCALE_REFERENCE.replace("return x * 2.0", "return x @ x")  # (4, n) @ (4, n) cannot multiply
    with pytest.raises(InvalidProblem, match="reference itself fails"):
        evaluate(evaluator, write_problem(tmp_path, scale_candidate(), reference=ref))


def test_writing_into_the_input_fails_even_when_the_output_is_right(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    cand = scale_candidate(
        (
            "tl.store(out_ptr + offs, x * 2.0, mask=mask)",
            "tl.store(out_ptr + offs, x * 2.0, mask=mask)\n    tl.store(x_ptr + offs, x * 0.0, mask=mask)",
        )
    )
    report = evaluate(evaluator, write_problem(tmp_path, cand))
    assert report.verdict == "mismatch"
    assert "input_modified:0" in report.cases[0].relationships
    assert report.score == 1.0  # values are right: the verdict comes from the mutated input alone


def test_store_past_the_end_is_reported_as_out_of_bounds(evaluator: Evaluator, tmp_path: Path) -> None:
    cand = scale_candidate(
        ("tl.store(out_ptr + offs, x * 2.0, mask=mask)", "tl.store(out_ptr + offs, x * 2.0)")
    )
    report = evaluate(evaluator, write_problem(tmp_path, cand))
    assert report.verdict == "mismatch"
    assert any(r.startswith("out_of_bounds_write") for r in report.cases[0].relationships)
    assert any("out-of-bounds write" in s for s in report.symptoms)
    # Every stray element counts against the score, so a fix that stops the writes shows as progress.
    case = report.cases[0]
    stray = 4 * 1024 - case.numel  # rows * n = 4000 elements, the unmasked store writes 16 blocks of 256
    assert case.correct == case.numel - stray
    assert report.score < 1.0


def test_output_that_changes_between_runs_is_caught_in_the_full_tier(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    cand = scale_candidate(
        ("super().__init__()", "super().__init__()\n        self.calls = 0"),
        ("return out", "self.calls += 1\n        return out + (self.calls - 1)"),
    )
    report = evaluate(evaluator, write_problem(tmp_path, cand), tier="full")
    first = report.cases[0]
    assert first.verdict == "mismatch"
    assert "nondeterministic" in first.relationships


def test_hard_coded_size_fails_only_on_the_automatic_shape_variant(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    cand = scale_candidate(("n = x.numel()", "n = 4000"))
    report = evaluate(evaluator, write_problem(tmp_path, cand), tier="full")
    failing = {c.name for c in report.cases if c.verdict != "pass"}
    assert report.verdict != "pass"
    assert failing and all(name.startswith("shape") for name in failing), failing


def test_contiguity_assumption_is_a_warning_from_the_noncontiguous_variant_only(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # An elementwise kernel over raw storage is right when out mirrors x's strides; this one allocates a
    # contiguous output, so a transposed x is read in the wrong order.
    cand = scale_candidate(
        ("        x = x.contiguous()\n", ""), ("torch.empty_like(x)", "torch.empty(x.shape, dtype=x.dtype)")
    )
    report = evaluate(evaluator, write_problem(tmp_path, cand), tier="full")
    failing = {c.name for c in report.cases if c.verdict != "pass"}
    assert failing == {"noncontig"}, failing
    assert report.verdict == "pass" and report.warnings  # KernelBench inputs are contiguous: a warning
    folder = write_problem(tmp_path / "required", cand, toml='noncontiguous = "require"\n')
    assert evaluate(evaluator, folder, tier="full").verdict == "mismatch"


def test_variant_with_non_finite_reference_is_dropped(evaluator: Evaluator, tmp_path: Path) -> None:
    ref = SCALE_REFERENCE.replace("return x * 2.0", "return torch.log(x) * 0 + x * 2.0")
    report = evaluate(evaluator, write_problem(tmp_path, scale_candidate(), reference=ref), tier="full")
    dropped = " ".join(report.dropped)
    assert "all_negative" in dropped and "not finite" in dropped
    assert "all_negative" not in {c.name for c in report.cases}
    assert "all_positive" in {c.name for c in report.cases}


def test_problem_toml_input_sets_replace_automatic_shapes(evaluator: Evaluator, tmp_path: Path) -> None:
    toml = "seeds = [5]\nvalue_variants = false\nnoncontiguous = false\n[[input_sets]]\nrows = 3\nn = 77\n"
    report = evaluate(evaluator, write_problem(tmp_path, scale_candidate(), toml=toml), tier="full")
    assert [c.name for c in report.cases] == ["seed5", "shape[n=77,rows=3]"]
    assert report.verdict == "pass"


WEIGHTED_REFERENCE = SCALE_REFERENCE.replace(
    "        super().__init__()\n",
    "        super().__init__()\n        self.weight = nn.Parameter(torch.randn(n))\n",
).replace("return x * 2.0", "return x * self.weight")

WEIGHTED_CANDIDATE = scale_candidate(
    ("def scale_kernel(x_ptr, out_ptr, n, BLOCK", "def scale_kernel(x_ptr, w_ptr, out_ptr, n, n_cols, BLOCK"),
    (
        "tl.store(out_ptr + offs, x * 2.0, mask=mask)",
        "w = tl.load(w_ptr + offs % n_cols, mask=mask)\n    tl.store(out_ptr + offs, x * w, mask=mask)",
    ),
    ("](x, out, n, BLOCK=256)", "](x, self.PARAM, out, n, x.shape[-1], BLOCK=256)"),
)


def test_matching_parameters_are_copied_from_the_reference(evaluator: Evaluator, tmp_path: Path) -> None:
    cand = WEIGHTED_CANDIDATE.replace(
        "super().__init__()", "super().__init__()\n        self.weight = nn.Parameter(torch.zeros(1000))"
    ).replace("self.PARAM", "self.weight")
    report = evaluate(evaluator, write_problem(tmp_path, cand, reference=WEIGHTED_REFERENCE))
    assert report.verdict == "pass", report.symptoms  # zeros unless the reference's weights were loaded


def test_differently_named_parameters_are_built_under_the_same_seed(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    cand = WEIGHTED_CANDIDATE.replace(
        "super().__init__()", "super().__init__()\n        self.w = nn.Parameter(torch.randn(1000))"
    ).replace("self.PARAM", "self.w")
    report = evaluate(evaluator, write_problem(tmp_path, cand, reference=WEIGHTED_REFERENCE))
    assert report.verdict == "pass", report.symptoms


ROW_DOT_REFERENCE = WEIGHTED_REFERENCE.replace("return x * self.weight", "return x @ self.weight")
ROW_DOT_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_dot(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, n, BLOCK):
        xk = tl.load(x_ptr + row * n + k + lanes, mask=k + lanes < n, other=0.0)
        wk = tl.load(w_ptr + k + lanes{w_mask})
        acc += xk * wk
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1000))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_dot[(x.shape[0],)](x, self.weight, out, x.shape[1], BLOCK=256)
        return out
"""


def test_a_read_past_a_weight_is_caught_though_its_lanes_are_masked_to_zero(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # K = 1000 in blocks of 256: the last block reads 24 elements past the weight. x is masked to 0 there,
    # so whatever finite memory follows the weight vanishes in the product; a GPU may fault on that read.
    # Parameters sit in canary-padded buffers like inputs, so the read brings a NaN into the output.
    unmasked = ROW_DOT_CANDIDATE.format(w_mask="")
    report = evaluate(evaluator, write_problem(tmp_path / "a", unmasked, reference=ROW_DOT_REFERENCE))
    assert report.verdict == "mismatch"
    masked = ROW_DOT_CANDIDATE.format(w_mask=", mask=k + lanes < n, other=0.0")
    report = evaluate(evaluator, write_problem(tmp_path / "b", masked, reference=ROW_DOT_REFERENCE))
    assert report.verdict == "pass", report.symptoms
