"""instrument: after the first failed fix (and on demand), localise where the best version still goes wrong.

Three findings: which input variants fail (from the report), probes that separate hypotheses (arange,
ones, large magnitudes, block-multiple vs ragged shapes, fp16), and intermediate capture (the first kernel
quantity that diverges from the reference's). A probe or capture that cannot run records why and the run
goes on.
"""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import config_of, evaluator_for, problem_for, traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis.capture import capture
from kernel_medic.tools.diagnosis.probes import PROBES, run_probes

PROBE_TIMEOUT_S = 20.0
"""Wall clock per probe or capture job."""
PROBE_FLOOR_S = 5.0
"""The least a probe job gets when little of the wall budget is left."""


def variant_localisation(report: dict[str, Any]) -> dict[str, Any]:
    cases = [c for c in report.get("cases") or [] if c.get("counted", True)]
    failing = [c for c in cases if c.get("verdict") != "pass"]
    return {
        "kind": "variant_localisation",
        "failing": [c["name"] for c in failing],
        "passing": [c["name"] for c in cases if c.get("verdict") == "pass"],
        "patterns": {c["name"]: c.get("pattern") for c in failing},
        "first_failing": failing[0]["name"] if failing else None,
    }


def _capture_variant(report: dict[str, Any]) -> str | None:
    """Capture on large values when only they fail: that is where the divergence shows."""
    verdicts = {c["name"]: c.get("verdict") for c in report.get("cases") or []}
    if verdicts.get("x100") not in (None, "pass") and all(
        v == "pass" for name, v in verdicts.items() if name.startswith("seed")
    ):
        return "x100"
    return None


@traced("instrument")
def instrument(state: RepairState) -> dict[str, Any]:
    report = state.get("best_report") or {}
    findings: list[dict[str, Any]] = [variant_localisation(report)]
    try:
        config = config_of(state)
        problem = problem_for(state).with_candidate(
            state.get("best_source") or state.get("original_source", "")
        )
        pool = evaluator_for(config).pool
        # A slow kernel's probes once took 61 s: each job gets no more than what is left of the wall budget.
        left = config.wall_budget_s - state.get("wall_s", 0.0)
        timeout_s = min(PROBE_TIMEOUT_S, max(PROBE_FLOOR_S, left))
    except Exception as exc:  # a problem that cannot be rebuilt here must not end the run
        reason = f"{type(exc).__name__}: {exc}"
        return {"instrumentation": findings + [{"kind": "probe", "skipped": reason}]}
    try:
        for finding in run_probes(problem, pool, config.device, PROBES, timeout_s=timeout_s):
            findings.append({"kind": "probe", **finding})
    except Exception as exc:  # the probes are advisory: record why they failed
        findings.append({"kind": "probe", "skipped": f"{type(exc).__name__}: {exc}"})
    try:
        findings.append(capture(problem, pool, config.device, _capture_variant(report), timeout_s))
    except Exception as exc:
        findings.append({"kind": "capture", "skipped": f"{type(exc).__name__}: {exc}"})
    return {"instrumentation": findings}
