"""guard: the loop's budgets and convergence checks; the only way back to diagnose, or on to END."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.budget import stop_reason
from kernel_medic.graph.runtime import config_of, traced
from kernel_medic.graph.state import RepairState


@traced("guard")
def guard(state: RepairState) -> dict[str, Any]:
    reason = stop_reason(state, config_of(state))
    if reason is None:
        return {}
    refused = (state.get("integrity") or {}).get("verdict") in ("cheat", "suspicious")
    return {"status": "rejected" if refused else "unrepaired", "stop_reason": reason}
