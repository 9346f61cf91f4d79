"""audit: the integrity gate, the only door to "repaired": full coverage, then the static, sandboxed and
held-back anti-cheat checks of `tools/integrity/gate.py`."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.budget import stop_reason
from kernel_medic.graph.runtime import config_of, evaluator_for, problem_for, traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.integrity.gate import audit as run_audit
from kernel_medic.tools.integrity.static_checks import Finding, static_findings, verdict
from kernel_medic.tools.repair.host_checks import after_refusal


@traced("audit")
def audit(state: RepairState) -> dict[str, Any]:
    config = config_of(state)
    pending = state.get("pending")
    source = pending["source"] if pending else state["best_source"]
    report = pending["report"] if pending else state.get("best_report") or {}
    problem = problem_for(state).with_candidate(source)
    findings: list[Finding] = []
    checks: list[str] = []
    if report.get("tier") != "full" or report.get("verdict") != "pass":
        # Not a full-tier pass: refused without running anything, with what the code alone shows.
        coverage = f"{report.get('tier')} tier verdict {report.get('verdict')}"
        name = problem.candidate_path.name
        findings = static_findings(
            source, state.get("original_source"), config.regeneration_fraction, filename=name
        )
        findings.append(Finding("full_coverage", "suspicious", 0, f"not a full-tier pass: {coverage}", name))
        checks = ["static"]
    else:
        result = run_audit(
            problem,
            evaluator_for(config),
            state.get("original_source"),
            regeneration_fraction=config.regeneration_fraction,
            unreached_policy="reject" if config.unreached_findings == "reject" else "warn",
            reports=(state["initial_report"], report) if state.get("initial_report") else None,
        )
        findings, checks = result.findings, result.checks
    outcome = verdict(findings)
    integrity = {
        "verdict": outcome,
        "findings": [f.to_dict() for f in findings],
        "tier": report.get("tier"),
        "checks": checks,
    }
    if outcome == "clean":
        score = report.get("score", 1.0)
        return {
            "integrity": integrity,
            "best_source": source,
            "best_score": score,
            "best_verdict": "pass",
            "best_report": report,
            "pending": None,
        }
    feedback = "The integrity gate refused the last passing version: " + "; ".join(
        f"{f.rule} at line {f.line}: {f.evidence}" for f in findings
    )
    delta = {"integrity": integrity, "pending": None, "feedback": feedback, "refused_source": source}
    # Host compute only in the wrapper's own input checks is no cheat to give up on: patch drops them.
    if (
        outcome == "cheat"
        and (source == state.get("original_source") or inherited(integrity["findings"]))
        and after_refusal(source, integrity["findings"]) is None
    ):
        # The candidate as given is a cheat (it computes on the host, never launches its kernel...): it
        # already passes every test, or a version that passes is refused only for what the candidate did
        # on lines the tests run (torch computing a linear layer before the fused kernel). No small edit turns
        # that into an honest kernel, so stop instead of patching around it until a budget ends the run.
        delta.update(status="rejected", stop_reason="cheat_as_given")
        return delta
    reason = stop_reason(state, config)
    if reason is not None:
        delta.update(status="rejected", stop_reason=reason)
    return delta


def inherited(findings: list[dict[str, Any]]) -> bool:
    """Whether every cheat among a refusal's findings is the candidate's own, on a line the tests run: a
    static finding the original had there (`pre-existing`, `reached`), or a sandboxed one (no origin) at a
    line that carries such a finding (the host compute the static layer named)."""
    cheats = [f for f in findings if f.get("severity") == "cheat"]
    own = {int(f.get("line") or 0) for f in cheats if f.get("origin") == "pre-existing" and f.get("reached")}
    return bool(own) and all(
        (f.get("origin") == "pre-existing" and f.get("reached"))
        or (f.get("origin") is None and int(f.get("line") or 0) in own)
        for f in cheats
    )
