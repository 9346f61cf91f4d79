"""diagnose: ranked bug-class hypotheses from the best version's mismatch report."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis import hypotheses


@traced("diagnose")
def diagnose(state: RepairState) -> dict[str, Any]:
    return {"diagnosis": hypotheses(state.get("best_report") or {})}
