"""distill: turn a verified, audited repair into a failure pattern the next similar case can retrieve."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis import evidence
from kernel_medic.tools.edits import unified_diff
from kernel_medic.tools.trace import source_hash


@traced("distill")
def distill(state: RepairState) -> dict[str, Any]:
    original = state.get("original_source", "")
    repaired = state["best_source"]
    if repaired == original:
        return {"status": "repaired", "stop_reason": "already_passes"}
    fixes = [a for a in state.get("attempts") or [] if a.get("improved") or a.get("verdict") == "pass"]
    # The symptoms worth remembering are the original candidate's, before any fix.
    first_report = state.get("initial_report") or {}
    pattern = {
        "id": f"distilled-{source_hash(original + repaired)}",
        "title": "; ".join(a["description"] for a in fixes)[:200],
        "bug_classes": sorted({a["hypothesis"] for a in fixes}),
        "rules": [a["rule"] for a in fixes],
        "symptoms": evidence(first_report),
        "diff": unified_diff(original, repaired),
        "provenance": f"distilled from {state.get('problem_name', 'a run')}",
    }
    return {"distilled": pattern, "status": "repaired", "stop_reason": "repaired"}
