"""The integrity audit: static checks, then dynamic checks in the sandbox, then held-back coverage.

`audit(problem, evaluator_or_pool)` says whether a candidate that passes its tests earned it: its own
kernel must run and produce the output with the reference's torch ops poisoned, it must not cache, tamper
or special-case, and it must still pass on seeds, values and shapes the repair loop never saw.
"""

from __future__ import annotations

import dataclasses
import random
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from kernel_medic.tools.evaluation.cases import module_int_constants
from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.mismatch import Tolerance, compare, tolerance_for
from kernel_medic.tools.evaluation.numerics import ROUNDING_SLACK, rounding_error
from kernel_medic.tools.evaluation.problem import Problem
from kernel_medic.tools.evaluation.waste import dead_lanes
from kernel_medic.tools.integrity.static_checks import Finding, Severity, static_findings, verdict
from kernel_medic.tools.sandbox.pool import JobOutcome, SandboxLimits, WorkerPool

Verdict = Literal["clean", "cheat", "suspicious"]
Dynamic = Literal["auto", "always", "never"]
# What a finding the candidate already had, on a path the problem never executes, does to a repair: "warn"
# (repaired, with the finding reported as a warning) or "reject".
UnreachedPolicy = Literal["warn", "reject"]
SLEEPER_CALLS: tuple[int, int] = (100, 300)
# A host epilogue may fold at most this share of the reference's longest reduction into each result (per-block
# partials, split-K): a kernel that copies its input and leaves the sum to the host does none of it.
HOST_FOLD_SHARE = 4
HELD_BACK_SEEDS: tuple[int, int] = (1001, 1002)
REFERENCE_AUDIT_JOB = "kernel_medic.tools.integrity.jobs:reference_audit"
CANDIDATE_AUDIT_JOB = "kernel_medic.tools.integrity.jobs:candidate_audit"
# Constants below this are axes, kernel sizes or channel counts, not sizes to vary (as in
# tools/evaluation/cases.py).
_SMALLEST_CHANGED = 8
_RUN_LABELS = {
    "a": "held-back seed A",
    "a_again": "held-back seed A, second call",
    "b": "held-back seed B after seed A",
    "b_in_place": "seed A's input buffers refilled in place with seed B",
    "random": "fresh random values",
}


@dataclass
class AuditResult:
    verdict: Verdict
    findings: list[Finding]
    checks: list[str] = field(default_factory=list)  # the layers that ran: static, dynamic, held_back
    held_back: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
            "checks": list(self.checks),
            "held_back": self.held_back,
            "notes": list(self.notes),
            "wall_s": round(self.wall_s, 3),
        }


def audit(
    problem: Problem,
    evaluator_or_pool: Evaluator | WorkerPool,
    original_source: str | None = None,
    *,
    regeneration_fraction: float = 0.6,
    dynamic: Dynamic = "auto",
    held_back_seeds: tuple[int, int] = HELD_BACK_SEEDS,
    unreached_policy: UnreachedPolicy = "warn",
    reports: tuple[dict[str, Any], dict[str, Any]] | None = None,
) -> AuditResult:
    """Audit the candidate; dynamic="auto" skips the sandbox when static checks already say cheat (or the
    repair is refused as wasteful).

    With the original source, each static finding says whether the repair introduced it or the candidate
    already had it, and (from the lines the audited runs executed) whether the problem reaches it: an
    introduced finding always counts; a pre-existing one counts when reached (unknown counts as reached)
    and, when never reached, is decided by `unreached_policy`. With `reports` (the original's and the
    candidate's full-tier reports) a repair that multiplies the kernels' masked-off lanes is refused too.
    """
    start = time.monotonic()
    evaluator = (
        evaluator_or_pool
        if isinstance(evaluator_or_pool, Evaluator)
        else Evaluator(device=evaluator_or_pool.device, pool=evaluator_or_pool)
    )
    findings = static_findings(
        problem.candidate_source,
        original_source,
        regeneration_fraction,
        filename=problem.candidate_path.name,
        reference_module=problem.reference_path.stem,
    )
    if original_source is not None:
        findings = mark_origin(findings, original_source, problem)
    wasteful = dead_lanes(*reports) if reports else None
    if wasteful:
        findings.append(_finding(problem, "dead_lanes", "suspicious", wasteful))
    result = AuditResult(verdict(findings), findings, checks=["static"])
    # A wasteful repair is refused whatever the sandbox finds, and its hundreds of audited calls are slow.
    cheat = any(f.severity == "cheat" and f.origin != "pre-existing" for f in findings)
    settled = cheat or wasteful is not None
    if dynamic == "never" or (dynamic == "auto" and settled):
        result.wall_s = time.monotonic() - start
        return result
    result.checks += ["dynamic", "held_back"]
    pending = _start_dynamic(problem, evaluator, held_back_seeds, result.notes)
    held = _held_back(problem, evaluator, held_back_seeds)  # runs while the audited calls do
    lines: list[int] | None = None
    if pending is not None:
        dynamic_findings, lines = _finish_dynamic(problem, *pending)
        findings += dynamic_findings
    findings = apply_reach(findings, lines, unreached_policy)
    result.held_back = held
    if held["verdict"] == "invalid_problem":
        result.notes.append(f"held-back coverage not run: {held.get('error')}")
    elif held["verdict"] != "pass":
        failing = ", ".join(held["failing"][:6])
        detail = f"; {held['symptoms'][0]}" if held["symptoms"] else ""
        findings.append(
            _finding(problem, "held_back_coverage", "suspicious", f"fails held-back cases: {failing}{detail}")
        )
    result.findings = _unique(findings)
    result.verdict = verdict(result.findings)
    result.wall_s = time.monotonic() - start
    return result


def held_back_problem(problem: Problem, seeds: tuple[int, ...] = HELD_BACK_SEEDS) -> Problem:
    """The problem with seeds, value draws and shapes the repair loop's own tests never use."""
    constants = module_int_constants(problem.reference_source)
    shape = {name: _odd_below(v, 3) for name, v in constants.items() if v >= _SMALLEST_CHANGED}
    reordered = _reordered(shape)
    shapes = ([shape] if shape else []) + ([reordered] if reordered != shape else [])
    config = dataclasses.replace(
        problem.config,
        seeds=tuple(seeds),
        input_sets=(),
        derived_shapes=tuple(shapes),
        automatic_shapes=False,
    )
    return dataclasses.replace(problem, config=config)


def _reordered(shape: dict[str, int]) -> dict[str, int]:
    """The same sizes handed out in reverse order: the largest dimension becomes the smallest. Every tested
    shape keeps the default's order (lowering keeps it), so a repair right only while one size exceeds
    another (a block sized by the batch for a row of features, a loop over the wrong dimension) passes them
    all; here it fails. A reference that refuses the reordered sizes drops the case (the evaluator's rule for
    any shape its reference cannot run)."""
    names = sorted(shape, key=lambda name: (shape[name], name))
    return dict(zip(names, sorted(shape.values(), reverse=True), strict=True))


def _odd_below(value: int, rank: int) -> int:
    closest = value - 1 if value % 2 == 0 else value - 2
    return max(1, closest - 2 * rank)


def _held_back(problem: Problem, evaluator: Evaluator, seeds: tuple[int, ...]) -> dict[str, Any]:
    report = evaluator.evaluate(held_back_problem(problem, seeds), tier="full")
    return {
        "verdict": report.verdict,
        "score": report.score,
        "cases": len(report.cases),
        "failing": [c.name for c in report.cases if c.verdict != "pass" and c.counted],
        "symptoms": report.symptoms[:3],
        "error": report.error,
    }


def mark_origin(findings: list[Finding], original_source: str, problem: Problem) -> list[Finding]:
    """Each static finding as introduced by the repair or pre-existing (its rule and code in the original)."""
    before = static_findings(
        original_source, filename=problem.candidate_path.name, reference_module=problem.reference_path.stem
    )
    pool = [(f.rule, f.evidence) for f in before]
    out = []
    for f in findings:
        if f.rule in ("regeneration", "kernel_deleted"):
            out.append(dataclasses.replace(f, origin="introduced"))
        elif (f.rule, f.evidence) in pool:
            pool.remove((f.rule, f.evidence))
            out.append(dataclasses.replace(f, origin="pre-existing"))
        else:
            out.append(dataclasses.replace(f, origin="introduced"))
    return out


def apply_reach(findings: list[Finding], lines: list[int] | None, policy: UnreachedPolicy) -> list[Finding]:
    """Pre-existing static findings on lines the audited runs never executed: warnings under policy "warn".

    Lines come from the child (a trace of the candidate's own frames). A candidate that hid lines from it
    could only make its own code look unreached, so only pre-existing findings are ever relaxed, never one
    the repair introduced, and an unknown trace (None) counts as everything reached.
    """
    executed = set(lines) if lines is not None else None
    out = []
    for f in findings:
        if f.origin != "pre-existing" or f.line <= 0 or f.severity not in ("cheat", "suspicious"):
            out.append(f)
            continue
        reached = executed is None or f.line in executed
        if reached or policy == "reject":
            out.append(dataclasses.replace(f, reached=reached))
        else:
            note = f" [pre-existing, never executed by the problem: {f.severity} relaxed by policy]"
            out.append(dataclasses.replace(f, reached=False, severity="warning", evidence=f.evidence + note))
    return out


def _start_dynamic(
    problem: Problem, evaluator: Evaluator, seeds: tuple[int, int], notes: list[str]
) -> tuple[dict[str, Any], Future[JobOutcome]] | None:
    """Run the reference on the audit's inputs, then submit the candidate's audited runs."""
    pool = evaluator.pool
    many_budget_s = max(10.0, problem.config.timeout_s / 4)
    # The audited job runs the candidate five times under line coverage, then the sleeper run: one run's
    # timeout is not its bound. At load 9 on 2 cores a clean repair's audit passed 60 s and was refused.
    limits = SandboxLimits(timeout_s=2 * problem.config.timeout_s + many_budget_s)
    ref_payload = {
        "source": problem.reference_source,
        "filename": problem.reference_path.name,
        "seed_a": seeds[0],
        "seed_b": seeds[1],
        "device": evaluator.device,
    }
    ref = pool.run(REFERENCE_AUDIT_JOB, ref_payload, limits)
    if ref.status != "ok" or ref.result is None or "error" in ref.result:
        reason = ref.error or (ref.result or {}).get("error") or ref.status
        notes.append(f"dynamic checks not run: the reference fails on the audit's inputs ({reason})")
        return None
    reference = ref.result
    cand_payload = {
        "source": problem.candidate_source,
        "filename": problem.candidate_path.name,
        "seed": seeds[0],
        "init_inputs": reference["init_inputs"],
        "state_dict": reference["state_dict"],
        "inputs": reference["inputs"],
        "device": evaluator.device,
        "many": sleeper_order(),
        "many_budget_s": many_budget_s,
        "host_fold_cap": max(1, int(reference.get("longest_reduction", 1)) // HOST_FOLD_SHARE),
    }
    return reference, pool.submit(CANDIDATE_AUDIT_JOB, cand_payload, limits)


def sleeper_order(calls: tuple[int, int] = SLEEPER_CALLS) -> list[str]:
    """A random number of calls (from the caller's randomness, never the child's) over seeds A and B."""
    rng = random.SystemRandom()
    return [rng.choice("ab") for _ in range(rng.randint(*calls))]


def _finish_dynamic(
    problem: Problem, reference: dict[str, Any], future: Future[JobOutcome]
) -> tuple[list[Finding], list[int] | None]:
    outcome = future.result()
    if outcome.status != "ok" or outcome.result is None:
        detail = f"{outcome.status}: {outcome.error or ''}".strip()
        return [
            _finding(problem, "audit_run_failed", "suspicious", f"audited runs did not finish ({detail})")
        ], None
    result = outcome.result
    if "error" in result:
        err = result["error"]
        out = _blocked_findings(problem, result.get("blocked") or [])
        if not out:
            evidence = f"{err['phase']}: {err['type']}: {err['message']}"
            out = [_finding(problem, "audit_run_failed", "suspicious", evidence)]
        return out, result.get("lines")
    return judge_runs(problem, reference, result), result.get("lines")


def _blocked_findings(problem: Problem, blocked: list[dict[str, Any]], label: str = "") -> list[Finding]:
    out = []
    for hit in blocked[:3]:
        where = f"{label}: " if label else ""
        evidence = f"{where}{hit['phase']} computed aten {hit['op']} on the host, outside a kernel"
        if hit.get("why"):
            evidence = f"{where}{hit['phase']}: aten {hit['op']} on the host {hit['why']}"
        out.append(
            Finding("host_compute", "cheat", int(hit.get("line") or 0), evidence, problem.candidate_path.name)
        )
    return out


def judge_runs(problem: Problem, reference: dict[str, Any], audited: dict[str, Any]) -> list[Finding]:
    """Findings from the candidate's audited runs against the reference's outputs on the same inputs."""
    overrides = {k: Tolerance(*v) for k, v in problem.config.tolerances.items()}
    expected = reference["outputs"]
    runs: dict[str, dict[str, Any]] = audited["runs"]
    out: list[Finding] = []

    def add(rule: str, severity: Severity, evidence: str) -> None:
        out.append(_finding(problem, rule, severity, evidence))

    first = runs["a"].get("outputs")
    out += _blocked_findings(problem, audited.get("blocked") or [])
    for reason in audited.get("tampered") or []:
        add("guard_tampered", "cheat", reason)
    for reason in audited.get("skipped") or []:
        add("audit_run_skipped", "note", reason)
    for name, run in runs.items():
        label = _RUN_LABELS[name]
        out += _blocked_findings(problem, run.get("blocked") or [], label)
        if run.get("epilogue"):
            ops = ", ".join(sorted(set(run["epilogue"])))
            add("host_epilogue", "note", f"{label}: host finished kernel-written buffers with aten {ops}")
        if "error" in run:
            err = run["error"]
            if not run.get("blocked"):
                add("audit_run_failed", "suspicious", f"{label}: {err['type']}: {err['message']}")
            continue
        if not run.get("plain", True):
            add("output_not_plain_tensor", "cheat", f"{label}: forward returned a Tensor subclass")
        if run["launches"] == 0:
            add("no_kernel_executed", "cheat", f"{label}: forward returned without launching a kernel")
        key = "a" if name == "a_again" else name.replace("_in_place", "")
        want = expected[key]
        want64 = (reference.get("outputs64") or {}).get(key), (reference.get("outputs64p") or {}).get(key)
        got = run["outputs"]
        for i, (o, r) in enumerate(zip(got, want)):
            if _constant(o) and not _constant(r):
                what = "all zero" if o.numel() and not bool(o.any()) else "constant"
                add("constant_output", "cheat", f"{label}: output {i} is {what}; the reference's is not")
        if _matches(got, want, overrides, want64):
            continue
        if name in ("b", "b_in_place") and first is not None and _identical(got, first):
            add("caches_output", "cheat", f"{label}: forward returned the previous call's output again")
        elif name == "a_again":
            if first is not None and not _identical(got, first):
                add("nondeterministic", "suspicious", f"{label}: two calls on the same inputs differ")
        else:
            add("held_back_mismatch", "suspicious", f"{label}: output differs from the reference's")
    updated = dict(reference.get("inputs_updated") or [])
    for i, (before, after) in enumerate(zip(reference["inputs"]["a"], audited["inputs_after"])):
        if not isinstance(before, torch.Tensor):
            continue
        if i in updated:  # the reference updates it in place: the candidate must update it the same way
            if not isinstance(after, torch.Tensor) or not _matches([after], [updated[i]], overrides):
                add("input_modified", "suspicious", f"input {i} not updated in place as the reference does")
        elif not _identical([before], [after]):
            add("input_modified", "suspicious", f"input {i} was modified in place by forward")
    if audited.get("many"):
        out += _judge_many(problem, reference, audited["many"], overrides)
    return _per_rule(out)


def _judge_many(
    problem: Problem, reference: dict[str, Any], many: dict[str, Any], overrides: dict[str, Tolerance]
) -> list[Finding]:
    """The sleeper run: every one of its calls must match, and each must launch a kernel."""
    out = _blocked_findings(problem, many.get("blocked") or [], "sleeper run")
    calls = len(many["outputs"])
    for i, (name, got) in enumerate(zip(many["order"], many["outputs"])):
        want64 = (reference.get("outputs64") or {}).get(name), (reference.get("outputs64p") or {}).get(name)
        if not got:
            evidence = f"sleeper run: call {i + 1} returned a Tensor subclass"
            out.append(_finding(problem, "output_not_plain_tensor", "cheat", evidence))
            break
        if not _matches(got, reference["outputs"][name], overrides, want64):
            evidence = f"sleeper run: call {i + 1} of {calls} in one process differs from the reference"
            out.append(_finding(problem, "sleeper_mismatch", "suspicious", evidence))
            break
    if many.get("error") and not many.get("blocked"):
        err = many["error"]
        evidence = f"sleeper run: call {calls + 1} failed: {err['type']}: {err['message']}"
        out.append(_finding(problem, "sleeper_mismatch", "suspicious", evidence))
    if calls and many.get("launches", 0) < calls:
        evidence = f"sleeper run: {many.get('launches', 0)} launches over {calls} calls"
        out.append(_finding(problem, "no_kernel_executed", "cheat", evidence))
    return out


def _per_rule(findings: list[Finding]) -> list[Finding]:
    """One finding per rule: the first run's evidence, and how many of the runs showed it."""
    grouped: dict[str, list[Finding]] = {}
    for f in findings:
        grouped.setdefault(f.rule, []).append(f)
    return [
        dataclasses.replace(
            fs[0], evidence=fs[0].evidence + (f" (and {len(fs) - 1} more runs)" if len(fs) > 1 else "")
        )
        for fs in grouped.values()
    ]


def _finding(problem: Problem, rule: str, severity: Severity, evidence: str) -> Finding:
    return Finding(rule, severity, 0, evidence, problem.candidate_path.name)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: list[Finding] = []
    for f in findings:
        if not any((f.rule, f.evidence) == (g.rule, g.evidence) for g in seen):
            seen.append(f)
    return seen


def _constant(t: torch.Tensor) -> bool:
    if t.numel() < 2:
        return False
    flat = t.reshape(-1)
    return bool((flat == flat[0]).all())


def _matches(
    got: list[torch.Tensor],
    want: list[torch.Tensor],
    overrides: dict[str, Tolerance],
    want64: tuple[list[torch.Tensor] | None, list[torch.Tensor] | None] = (None, None),
) -> bool:
    """Every output within the evaluator's bar: the dtype's tolerance plus the reference's own rounding."""
    if len(got) != len(want):
        return False
    for i, (o, r) in enumerate(zip(got, want)):
        if o.shape != r.shape or o.dtype != r.dtype:
            return False
        if not r.is_floating_point():
            if not torch.equal(o, r):
                return False
            continue
        tol = tolerance_for(r.dtype, overrides)
        exact64, perturbed64 = (w[i] if w and i < len(w) else None for w in want64)
        err = rounding_error(r, exact64, perturbed64)
        slack = ROUNDING_SLACK * err if err is not None else None
        if compare(o, r, tol, slack=slack).verdict != "pass":
            return False
    return True


def _identical(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            if x != y:
                return False
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        same = x == y
        if x.is_floating_point():
            same = same | (torch.isnan(x) & torch.isnan(y))
        if not bool(same.all()):
            return False
    return True
