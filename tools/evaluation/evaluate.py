"""Full-coverage evaluation: run a candidate against its reference over many cases and say how it differs.

The plain, boring core everything else trusts. Per case, the reference runs in one sandboxed child (its
inputs and outputs are cached per problem, since they never change between candidates) and the candidate in
another, on harness-allocated copies of the same inputs; the two never share a process, so the candidate
cannot see or reuse the reference's memory. All judgement happens here, in the caller, from plain tensors.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch
from kernel_medic.tools.evaluation import arena, crashes
from kernel_medic.tools.evaluation.cases import MAGNITUDES, CaseSpec, cases_for_tier, rewrite_constants
from kernel_medic.tools.evaluation.jobs import canary_bits
from kernel_medic.tools.evaluation.mismatch import Comparison, Tolerance, compare, describe, tolerance_for
from kernel_medic.tools.evaluation.numerics import ROUNDING_SLACK, rounding_error
from kernel_medic.tools.evaluation.problem import InvalidProblem, Problem
from kernel_medic.tools.evaluation.settings import KERNELBENCH_TOLERANCE, ProblemConfig
from kernel_medic.tools.sandbox.pool import JobOutcome, SandboxLimits, WorkerPool

Tier = str
"""micro, light, full, or case:NAME (one case of the full tier; see cases_for_tier)."""
Verdict = Literal[
    "pass",
    "mismatch",
    "shape_mismatch",
    "dtype_mismatch",
    "runtime_error",
    "compile_error",
    "timeout",
    "crash",
    "invalid_problem",
    "outside_domain",
]
# Worst first: the overall verdict is the worst case verdict.
SEVERITY: tuple[Verdict, ...] = (
    "invalid_problem",
    "crash",
    "timeout",
    "compile_error",
    "runtime_error",
    "shape_mismatch",
    "dtype_mismatch",
    "mismatch",
    "pass",
    "outside_domain",
)
# A derived shape the candidate cannot compile or launch for one of these reasons is outside its domain
# (a power-of-2 `tl.arange`, a block that must divide a dimension, a compile-time dimension), not a bug.
_STATIC_CONSTRAINT = re.compile(
    r"power of (?:2|two)|power-of-(?:2|two)|multiple of|divisible|constexpr|must be a constant|"
    r"arange|Input shapes should have|shape .* must|AssertionError",
    re.I,
)
REFERENCE_JOB = "kernel_medic.tools.evaluation.jobs:reference_case"
CANDIDATE_JOB = "kernel_medic.tools.evaluation.jobs:candidate_case"


@dataclass
class CaseResult:
    name: str
    verdict: Verdict
    numel: int = 0
    correct: int = 0
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    rel_l2: float = -1.0  # relative L2 distance to the reference (mismatch.compare); -1: not comparable
    mismatch_fraction: float = 0.0
    nan_count: int = 0
    inf_count: int = 0
    pattern: str = "none"
    pattern_detail: dict[str, Any] = field(default_factory=dict)
    relationships: list[str] = field(default_factory=list)
    symptoms: list[str] = field(default_factory=list)
    error: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0  # CPU seconds of the candidate's job (its cost, not slowed by other processes)
    work: int = 0  # elements the interpreter's ops produced in the candidate's kernels (0: unknown)
    lanes: int = 0  # lanes its kernels' loads and stores ran (interpreter only; 0: unknown)
    live_lanes: int = 0  # of those, the unmasked ones
    # False for cases reported but not judged: a layout warning, a shape outside the kernel's domain.
    counted: bool = True
    # The bar this case was judged by: profile, atol, rtol, and the reference's own rounding error.
    tolerance: dict[str, Any] = field(default_factory=dict)
    # A crash or wrong-shape/dtype output explained: class, candidate line, exception, evidence (crashes.py).
    crash: dict[str, Any] | None = None


@dataclass
class EvalReport:
    verdict: Verdict
    score: float
    tier: Tier
    device: str
    cases: list[CaseResult]
    symptoms: list[str]
    notes: list[str]
    dropped: list[str]
    wall_s: float
    error: str | None = None
    # Robustness findings outside the verdict (e.g. "assumes contiguous input") and domain notes.
    warnings: list[str] = field(default_factory=list)
    # The worst counted case's crash record (crashes.summary), None when nothing crashed.
    crash: dict[str, Any] | None = None
    cpu_s: float = 0.0  # CPU seconds of the candidate's jobs, all cases together
    work: int = 0  # elements the interpreter's ops produced, all cases together (0: unknown, not interpreted)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Reference:
    """One case's reference run, as the candidate will be judged against it."""

    spec: CaseSpec
    init_inputs: list[Any]
    inputs: list[Any]
    outputs: list[torch.Tensor]
    state_dict: dict[str, torch.Tensor]
    # float64 reruns of the reference: exact, and on perturbed inputs (see numerics.py)
    outputs64: list[torch.Tensor] | None = None
    outputs64p: list[torch.Tensor] | None = None
    # Inputs the reference itself updates in place: index -> the input as the reference leaves it
    inputs_updated: dict[int, torch.Tensor] = field(default_factory=dict)


ProgressFn = Callable[[int, int, CaseResult], None]


class Evaluator:
    """Evaluates candidates for one device; owns (or borrows) a warm worker pool and a reference cache."""

    def __init__(
        self, device: str = "cpu", pool: WorkerPool | None = None, workers: int | None = None
    ) -> None:
        self.device = device
        if device == "cpu":
            # This process's tensor work (canary checks, comparisons) is small and the sandbox workers run on
            # the same cores: intra-op threads only spin against them (a 3 MB canary fill took 120 ms with
            # 2 threads on a loaded 2-core machine, 20 ms with 1). Process-wide, as torch's setting is.
            torch.set_num_threads(1)
        self._own_pool = pool is None
        self._pool = pool
        self._workers = workers
        self._references: dict[str, _Reference | str] = {}

    @property
    def pool(self) -> WorkerPool:
        if self._pool is None:
            self._pool = WorkerPool(device=self.device, size=self._workers)
        return self._pool

    def close(self) -> None:
        if self._own_pool and self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def evaluate(
        self,
        problem: Problem,
        tier: Tier = "light",
        progress: ProgressFn | None = None,
        deadline: float | None = None,
    ) -> EvalReport:
        """Run every case of the tier. Raises InvalidProblem when the reference itself cannot run.

        With a `deadline` (a `time.monotonic()` value: screening, and verify's bound by the wall budget),
        the cases not started once one times out or the deadline passes are not run and count as timeouts:
        a deadline can fail a candidate, never pass one.
        """
        start = time.monotonic()
        specs = cases_for_tier(tier, problem.config, problem.size_constants)
        limits = SandboxLimits(timeout_s=problem.config.timeout_s)
        notes: list[str] = []
        dropped: list[str] = []

        references = self._references_for(problem, specs, limits, dropped)
        results = self._run_cases(problem, references, limits, notes, tier, progress, deadline)
        if isinstance(results, CaseResult):  # the candidate crashed at import: every case would, alike
            error = results.error
            return _report("compile_error", [results], tier, self.device, notes, dropped, start, error)
        _mark_uncounted(problem, results, specs)
        # A shape outside the domain hides what the other constants would show: vary them one at a time.
        retry = _one_constant_at_a_time(results, specs)
        if retry:
            more = self._run_cases(
                problem,
                self._references_for(problem, retry, limits, dropped),
                limits,
                notes,
                tier,
                None,
                deadline,
            )
            if isinstance(more, list):
                _mark_uncounted(problem, more, retry)
                results += more
        counted = [r for r in results if r.counted]
        verdict = min((r.verdict for r in counted), key=SEVERITY.index) if counted else "pass"
        warnings = _warnings(results)
        return _report(verdict, results, tier, self.device, notes, dropped, start, warnings=warnings)

    def _run_cases(
        self,
        problem: Problem,
        references: list[tuple[CaseSpec, _Reference]],
        limits: SandboxLimits,
        notes: list[str],
        tier: Tier,
        progress: ProgressFn | None,
        deadline: float | None = None,
    ) -> list[CaseResult] | CaseResult:
        """Every case's verdict, or the one import-time crash that makes the others moot."""
        candidate_futures = {
            spec.name: self._submit_candidate(
                problem, ref, limits, runs=2 if i == 0 and tier == "full" else 1
            )
            for i, (spec, ref) in enumerate(references)
        }
        results: list[CaseResult] = []
        skip = ""  # why the cases not started yet are not run (screening against a deadline only)
        for spec, ref in references:
            future = candidate_futures[spec.name]
            if deadline is not None and not skip:
                # Cases queued behind a slow one (or behind another evaluation's) are dropped when the
                # deadline passes, not when the slow one ends: two finalists once ran 40 s past theirs.
                wait([future], timeout=max(0.0, deadline - time.monotonic()))
                if not future.done() and time.monotonic() > deadline:
                    skip = "out of screening time"
                    for fut in candidate_futures.values():
                        fut.cancel()  # only those not started yet
            if future.cancelled():
                numel = sum(t.numel() for t in ref.outputs)
                results.append(CaseResult(spec.name, "timeout", numel=numel, error=f"not run: {skip}"))
                continue
            outcome = future.result()
            result = self._judge(problem, ref, outcome, notes)
            if deadline is not None and not skip:
                if result.verdict == "timeout":
                    skip = "an earlier case timed out"
                elif time.monotonic() > deadline:
                    skip = "out of screening time"
                for fut in candidate_futures.values() if skip else ():
                    fut.cancel()  # only those not started yet
            if (result.crash or {}).get("phase") == "import":
                for fut in candidate_futures.values():
                    fut.cancel()
                return result
            results.append(result)
            if progress is not None:
                progress(len(results), len(references), result)
        return results

    # -- reference side -------------------------------------------------------------------------------

    def _references_for(
        self, problem: Problem, specs: list[CaseSpec], limits: SandboxLimits, dropped: list[str]
    ) -> list[tuple[CaseSpec, _Reference]]:
        pending: dict[str, Future[JobOutcome]] = {}
        keys = {spec.name: self._reference_key(problem, spec) for spec in specs}
        for spec in specs:
            if keys[spec.name] not in self._references:
                source = rewrite_constants(problem.reference_source, dict(spec.size_overrides))
                payload = {
                    "source": source,
                    "filename": problem.reference_path.name,
                    "case": spec.to_dict(),
                    "device": self.device,
                }
                pending[spec.name] = self.pool.submit(REFERENCE_JOB, payload, limits)
        for spec in specs:
            if spec.name in pending:
                self._references[keys[spec.name]] = _reference_from(spec, pending[spec.name].result())
        out: list[tuple[CaseSpec, _Reference]] = []
        for spec in specs:
            ref = self._references[keys[spec.name]]
            if isinstance(ref, _Reference):
                out.append((spec, ref))
            elif spec.value_variant is None and not spec.size_overrides and not spec.noncontiguous:
                raise InvalidProblem(f"{problem.reference_path}: the reference itself fails: {ref}")
            else:
                dropped.append(f"{spec.name}: {ref}")
        return out

    def _reference_key(self, problem: Problem, spec: CaseSpec) -> str:
        blob = json.dumps([problem.reference_source, spec.to_dict(), self.device], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    # -- candidate side -------------------------------------------------------------------------------

    def _submit_candidate(
        self, problem: Problem, ref: _Reference, limits: SandboxLimits, runs: int
    ) -> Future[JobOutcome]:
        payload = {
            "source": problem.candidate_source,
            "filename": problem.candidate_path.name,
            "seed": ref.spec.seed,
            "init_inputs": ref.init_inputs,
            "inputs": ref.inputs,
            "state_dict": ref.state_dict,
            "runs": runs,
            "device": self.device,
        }
        if self.device != "cpu":
            return self.pool.submit(CANDIDATE_JOB, payload, limits)
        # cpu: the first run's inputs and allocations live in a file this process reads back (arena.py)
        plan = arena.layout(ref.inputs, ref.outputs)
        payload["arena"] = plan
        return self.pool.submit(CANDIDATE_JOB, payload, limits, evidence=arena.initial_bytes(plan))

    def _judge(self, problem: Problem, ref: _Reference, outcome: JobOutcome, notes: list[str]) -> CaseResult:
        case = self._judge_outcome(problem, ref, outcome, notes)
        case.cpu_s = round(outcome.cpu_s, 3)
        counts = outcome.result if isinstance(outcome.result, dict) else {}
        case.work, case.lanes, case.live_lanes = (
            _count(counts.get(key)) for key in ("work", "lanes", "live_lanes")
        )
        return case

    def _judge_outcome(
        self, problem: Problem, ref: _Reference, outcome: JobOutcome, notes: list[str]
    ) -> CaseResult:
        name = ref.spec.name
        numel = sum(t.numel() for t in ref.outputs)
        if outcome.status in ("timeout", "crash"):
            return CaseResult(name, outcome.status, numel=numel, error=outcome.error, wall_s=outcome.wall_s)
        if outcome.status == "error" or outcome.result is None:
            # The harness itself failed (not the user's code): report it as a runtime error of the case.
            return CaseResult(name, "runtime_error", numel=numel, error=outcome.error, wall_s=outcome.wall_s)
        result = outcome.result
        for note in result.get("notes") or []:
            if note not in notes:
                notes.append(note)
        if "error" in result:
            err = result["error"]
            line = f"{err['type']}: {err['message']}"
            crash = crashes.explain_error(err, problem.candidate_source)
            if err["phase"] == "import":
                # The candidate's own failure (a missing import, demo code at module level): a crash verdict
                # with its line, repairable; only a broken reference or problem folder is invalid input.
                return CaseResult(
                    name,
                    "compile_error",
                    numel=numel,
                    error=f"{problem.candidate_path.name}: import-time crash: {line}",
                    wall_s=outcome.wall_s,
                    crash=crash,
                )
            verdict: Verdict = "compile_error" if err["from_triton"] else "runtime_error"
            return CaseResult(
                name,
                verdict,
                numel=numel,
                error=f"{err['phase']}: {line}",
                wall_s=outcome.wall_s,
                crash=crash,
            )
        if self.device == "cpu":  # canaries and inputs as read from the evidence file, not as the job says
            result = arena.apply(result, arena.layout(ref.inputs, ref.outputs), outcome.evidence)
        return _compare_case(problem, ref, result, outcome.wall_s)


def _reference_from(spec: CaseSpec, outcome: JobOutcome) -> _Reference | str:
    """The reference run, or a one-line reason it is unusable."""
    if outcome.status != "ok" or outcome.result is None:
        return outcome.error or outcome.status
    res = outcome.result
    if "error" in res:
        err = res["error"]
        return f"{err['phase']}: {err['type']}: {err['message']}"
    outputs = res["outputs"]
    if spec.value_variant and not all(
        bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point()
    ):
        return "reference output is not finite on this variant (uninformative)"
    return _Reference(
        spec,
        res["init_inputs"],
        res["inputs"],
        outputs,
        res["state_dict"],
        res.get("outputs64"),
        res.get("outputs64p"),
        dict(res.get("inputs_updated") or []),
    )


def _count(value: Any) -> int:
    """A count the candidate's process reported: a non-negative int, or 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _compare_case(problem: Problem, ref: _Reference, result: dict[str, Any], wall_s: float) -> CaseResult:
    overrides = {k: Tolerance(*v) for k, v in problem.config.tolerances.items()}
    tensor_inputs = [x for x in ref.inputs if isinstance(x, torch.Tensor)]
    outputs: list[torch.Tensor] = result["outputs"]
    symptoms: list[str] = []
    relationships: list[str] = []
    if len(outputs) != len(ref.outputs):
        return CaseResult(
            ref.spec.name,
            "shape_mismatch",
            numel=sum(t.numel() for t in ref.outputs),
            symptoms=[f"candidate returned {len(outputs)} outputs, reference {len(ref.outputs)}"],
            wall_s=wall_s,
            crash=_output_crash("shape_mismatch", problem, outputs, ref),
        )
    runs = [outputs] + ([result["repeat_outputs"]] if result.get("repeat_outputs") is not None else [])
    comparisons: list[Comparison] = []
    bars: list[dict[str, Any]] = []
    for i, reference in enumerate(ref.outputs):
        reference64 = _nth(ref.outputs64, i), _nth(ref.outputs64p, i)
        tol, slack, bar = _bar(problem.config, ref.spec, reference, reference64, overrides)
        bars.append(bar)
        # With a repeated run, judge the worse of the two: a kernel that passes by luck on stale memory fails.
        per_run = [compare(run[i], reference, tol, tensor_inputs, slack=slack) for run in runs]
        comparisons.append(min(per_run, key=lambda c: c.correct))
    if len(runs) == 2 and not all(_same(a, b) for a, b in zip(runs[0], runs[1])):
        relationships.append("nondeterministic")
        symptoms.append("two runs on the same inputs gave different outputs (uninitialised reads or races)")
    for i, (before, after) in enumerate(zip(ref.inputs, result["inputs_after"])):
        if not isinstance(before, torch.Tensor):
            continue
        expected = ref.inputs_updated.get(i)
        if expected is None and not _same(before, after):
            relationships.append(f"input_modified:{i}")
            symptoms.append(f"input {i} was modified in place by the candidate")
        elif expected is not None:
            # The reference updates this input in place: the candidate must leave it updated the same way,
            # judged like an output.
            tol, slack, _ = _bar(problem.config, ref.spec, expected, (None, None), overrides)
            if not isinstance(after, torch.Tensor) or after.shape != expected.shape:
                update_ok = False
            else:
                update_ok = compare(after, expected, tol, tensor_inputs, slack=slack).verdict == "pass"
            if not update_ok:
                relationships.append(f"input_update_wrong:{i}")
                symptoms.append(f"input {i} is not left as the reference's in-place update leaves it")
    stray = 0
    for pads in result["canaries"]:
        damage, count = _canary_damage(pads)
        stray += count
        if damage:
            relationships.append(f"out_of_bounds_write:{pads['label'].replace(' ', '')}")
            symptoms.append(f"out-of-bounds write around {pads['label']}: {damage}")

    multi = len(comparisons) > 1
    worst = min(comparisons, key=lambda c: SEVERITY.index(c.verdict))
    value_symptoms: list[str] = []
    value_relationships: list[str] = []
    for i, comp in enumerate(comparisons):
        prefix = f"output {i}: " if multi else ""
        value_symptoms += [prefix + s for s in describe(comp)] if comp.verdict != "pass" else []
        value_relationships += [(f"output{i}." if multi else "") + r for r in comp.relationships]
    symptoms = value_symptoms + symptoms
    relationships = value_relationships + relationships
    verdict: Verdict = worst.verdict
    if verdict == "pass" and relationships:
        verdict = "mismatch"
    numel = sum(c.numel for c in comparisons)
    return CaseResult(
        name=ref.spec.name,
        verdict=verdict,
        numel=numel,
        # Each write outside a buffer is an error too: a fix that stops them is progress the score shows.
        correct=max(0, sum(c.correct for c in comparisons) - stray),
        max_abs_err=max(c.max_abs_err for c in comparisons),
        max_rel_err=max(c.max_rel_err for c in comparisons),
        rel_l2=-1.0 if any(c.rel_l2 < 0 for c in comparisons) else max(c.rel_l2 for c in comparisons),
        mismatch_fraction=sum(c.mismatch_fraction * c.numel for c in comparisons) / max(numel, 1),
        nan_count=sum(c.nan_count for c in comparisons),
        inf_count=sum(c.inf_count for c in comparisons),
        pattern=worst.pattern,
        pattern_detail=worst.pattern_detail,
        relationships=relationships,
        symptoms=symptoms,
        wall_s=wall_s,
        tolerance=bars[0] if len(bars) == 1 else {"outputs": bars},
        crash=_output_crash(verdict, problem, outputs, ref)
        if verdict in ("shape_mismatch", "dtype_mismatch")
        else None,
    )


def _output_crash(
    verdict: str, problem: Problem, outputs: list[torch.Tensor], ref: _Reference
) -> dict[str, Any]:
    def spec(t: torch.Tensor) -> tuple[list[int], str]:
        return list(t.shape), str(t.dtype).removeprefix("torch.")

    shapes = [list(x.shape) if isinstance(x, torch.Tensor) else None for x in ref.inputs]
    got, expected = [spec(t) for t in outputs], [spec(t) for t in ref.outputs]
    return crashes.explain_output(verdict, problem.candidate_source, got, expected, shapes)


def _bar(
    config: ProblemConfig,
    spec: CaseSpec,
    reference: torch.Tensor,
    reference64: tuple[torch.Tensor | None, torch.Tensor | None],
    overrides: dict[str, Tolerance],
) -> tuple[Tolerance, torch.Tensor | None, dict[str, Any]]:
    """The tolerance an output is judged by, the per-element rounding slack, and how to report both."""
    exact = not (reference.is_floating_point() or reference.is_complex())
    if config.tolerance == "kernelbench":
        tol = tolerance_for(reference.dtype) if exact else Tolerance(*KERNELBENCH_TOLERANCE)
        return tol, None, {"profile": "kernelbench", "atol": tol.atol, "rtol": tol.rtol}
    if isinstance(config.tolerance, tuple) and not exact:
        tol = Tolerance(*config.tolerance)
    else:
        tol = tolerance_for(reference.dtype, overrides)
    bar: dict[str, Any] = {"profile": config.profile, "atol": tol.atol, "rtol": tol.rtol}
    err = None if exact else rounding_error(reference, *reference64)
    if err is None:
        scale = MAGNITUDES.get(spec.value_variant or "", 1.0)
        if scale > 1.0 and not exact:
            # No float64 reference: inputs 100x larger make a correct kernel's rounding 100x larger too.
            tol = Tolerance(tol.atol * scale, tol.rtol)
            bar["atol"] = tol.atol
        bar["reference_error"] = None
        return tol, None, bar
    bar["reference_error"] = float(err.max()) if err.numel() else 0.0
    bar["rounding_slack"] = ROUNDING_SLACK
    return tol, ROUNDING_SLACK * err, bar


def _nth(tensors: list[torch.Tensor] | None, i: int) -> torch.Tensor | None:
    return tensors[i] if tensors and i < len(tensors) else None


def _mark_uncounted(problem: Problem, results: list[CaseResult], specs: list[CaseSpec]) -> None:
    """Layout warnings and shapes outside the kernel's domain are reported but not judged."""
    by_name = {spec.name: spec for spec in specs}
    base_compiles = not any(
        r.verdict == "compile_error" for r in results if r.name in by_name and not by_name[r.name].derived
    )
    for result in results:
        spec = by_name.get(result.name)
        if spec is None:
            continue
        if spec.noncontiguous and problem.config.noncontiguous == "warn":
            result.counted = False
        elif (
            spec.derived
            and base_compiles
            and result.verdict in ("compile_error", "runtime_error")
            and _STATIC_CONSTRAINT.search(result.error or "")
        ):
            result.verdict = "outside_domain"
            result.counted = False


def _one_constant_at_a_time(results: list[CaseResult], specs: list[CaseSpec]) -> list[CaseSpec]:
    names = {spec.name for spec in specs}
    out: list[CaseSpec] = []
    for spec in specs:
        result = next((r for r in results if r.name == spec.name), None)
        if result is None or result.verdict != "outside_domain" or len(spec.size_overrides) < 2:
            continue
        for item in spec.size_overrides:
            name = "shape[" + f"{item[0]}={item[1]}" + "]"
            if name not in names:
                names.add(name)
                out.append(CaseSpec(name=name, seed=spec.seed, size_overrides=(item,), derived=True))
    return out


def _warnings(results: list[CaseResult]) -> list[str]:
    out: list[str] = []
    for r in results:
        if r.counted or r.verdict == "pass":
            continue
        if r.verdict == "outside_domain":
            out.append(f"{r.name} is outside the kernel's domain (not judged): {r.error}")
        else:
            what = f"{r.mismatch_fraction:.0%} wrong" if r.verdict == "mismatch" else (r.error or r.verdict)
            out.append(
                f"assumes contiguous input: the {r.name} case (same values, strided storage) gives "
                f"{r.verdict} ({what}); not part of the verdict (noncontiguous = \"require\" makes it one)"
            )
    return out


def _same(a: Any, b: Any) -> bool:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return a == b
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b) or _nan_equal(a, b))


def _nan_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if not a.is_floating_point():
        return False
    return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


def _canary_damage(pads: dict[str, Any]) -> tuple[str, int]:
    """What was written outside a buffer, and how many elements."""
    parts, stray = [], 0
    for side in ("before", "after"):
        pad: torch.Tensor = pads[side]
        bits = canary_bits(pad.dtype, pads["kind"])
        if bits is None or pad.numel() == 0:
            continue
        view_dtype, pattern = bits
        hit = pad.view(view_dtype) != pattern
        if bool(hit.any()):
            idx = hit.nonzero().flatten()
            reach = (len(pad) - int(idx.min())) if side == "before" else int(idx.max()) + 1
            parts.append(f"{int(hit.sum())} elements written {side} the buffer (up to {reach} away)")
            stray += int(hit.sum())
    return "; ".join(parts), stray


def _report(
    verdict: Verdict,
    cases: list[CaseResult],
    tier: Tier,
    device: str,
    notes: list[str],
    dropped: list[str],
    start: float,
    error: str | None = None,
    warnings: list[str] | None = None,
) -> EvalReport:
    judged = [c for c in cases if c.counted]
    total = sum(c.numel for c in judged)
    score = sum(c.correct for c in judged) / total if total else 0.0
    symptoms: list[str] = []
    for case in judged:
        for s in case.symptoms:
            if s not in symptoms:
                symptoms.append(s)
    crash = crashes.summary(cases) if verdict in crashes.CRASH_VERDICTS else None
    if crash and crash["phase"] != "output":  # the output's own symptom already says what is wrong with it
        where = f" at line {crash['line']} `{crash['code'][:80]}`" if crash.get("line") else ""
        symptoms.insert(0, f"crash ({crash['class']}){where}: {crash['exception']}: {crash['message']}")
    failing = {c.name for c in judged if c.verdict != "pass"}
    if failing and len(failing) < len(judged):
        passing = [c.name for c in judged if c.verdict == "pass"]
        symptoms.append(f"fails on {', '.join(sorted(failing))}; passes on {', '.join(passing)}")
    return EvalReport(
        verdict=verdict,
        score=round(score, 6),
        tier=tier,
        device=device,
        cases=cases,
        symptoms=symptoms,
        notes=notes,
        dropped=dropped,
        wall_s=round(time.monotonic() - start, 3),
        error=error,
        warnings=warnings or [],
        crash=crash,
        cpu_s=round(sum(c.cpu_s for c in cases), 3),
        work=sum(c.work for c in cases),
    )
