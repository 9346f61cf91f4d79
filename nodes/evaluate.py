"""evaluate: the candidate as given, on the full tier — the baseline every patch must beat."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import config_of, evaluator_for, problem_for, traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis.static_features import stub_kernels
from kernel_medic.tools.evaluation.problem import InvalidProblem
from kernel_medic.tools.integrity.static_checks import static_findings
from kernel_medic.tools.trace import append_event, digest


@traced("evaluate")
def evaluate(state: RepairState) -> dict[str, Any]:
    problem = problem_for(state)
    try:
        report = evaluator_for(config_of(state)).evaluate(problem, tier="full")
    except InvalidProblem as exc:
        return {"status": "invalid", "stop_reason": "invalid_problem", "error": str(exc)}
    data = report.to_dict()
    append_event(
        state.get("trace_path"),
        "tool",
        name="evaluate",
        tier="full",
        verdict=report.verdict,
        score=report.score,
        digest=digest(data),
        wall_s=report.wall_s,
    )
    if report.verdict == "invalid_problem":
        return {"status": "invalid", "stop_reason": "invalid_problem", "error": report.error or ""}
    delta: dict[str, Any] = {
        "best_score": report.score,
        "best_verdict": report.verdict,
        "best_report": data,
        "initial_report": data,
    }
    stubs = stub_kernels(problem.candidate_source) if report.verdict != "pass" else []
    if stubs:
        # Nothing to repair, only a kernel to write: stopping here saves a search that cannot succeed.
        names = ", ".join(stubs)
        delta.update(
            status="unrepaired",
            stop_reason="stub_kernel",
            error=f"kernel {names} has no body (only pass, ... or a docstring): write it, or regenerate",
        )
    elif report.verdict == "mismatch" and _never_launches(problem.candidate_source):
        # It runs and computes its wrong numbers without any kernel: whatever an edit makes pass is host code,
        # which the integrity gate refuses, so the search could only spend the budget.
        delta.update(
            status="unrepaired",
            stop_reason="no_kernel_launch",
            error="ModelNew's forward never launches a kernel (the numbers come from host code): "
            "nothing for a kernel repair to fix; launch the kernel, or regenerate",
        )
    elif (report.crash or {}).get("class") == "interpreter_limitation":
        # Not the kernel's bug: labelled, never "repaired" (the graph ends here, see builder.after_evaluate).
        evidence = report.crash["evidence"]
        delta.update(status="unrepaired", stop_reason="interpreter_limitation", error=evidence)
    return delta


def _never_launches(source: str) -> bool:
    return any(f.rule == "no_kernel_launch" for f in static_findings(source))
