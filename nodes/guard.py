"""guard: the loop's budgets and convergence checks; the only way back to diagnose, or on to END."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.budget import stop_reason
from kernel_medic.graph.runtime import config_of, traced
from kernel_medic.graph.state import RepairState, best_version
from kernel_medic.tools.trace import append_event

DEAD_END = ("no_applicable_patch", "no_progress")
"""Stops that say only that nothing gains from the best version, not that the run's budgets are spent."""


@traced("guard")
def guard(state: RepairState) -> dict[str, Any]:
    config = config_of(state)
    reason = stop_reason(state, config)
    if reason is None:
        return {}
    if (
        reason in DEAD_END
        and state.get("earlier_bests")
        and state.get("backtracks", 0) < config.max_backtracks
    ):
        return _back(state, reason)
    refused = (state.get("integrity") or {}).get("verdict") in ("cheat", "suspicious")
    return {"status": "rejected" if refused else "unrepaired", "stop_reason": reason}


def _back(state: RepairState, reason: str) -> dict[str, Any]:
    """Go on from the version before the best. A step that gained most on the full tier can still be the
    wrong road (a two-edit step that rewrote the index the second bug needed); the search's other steps
    from the earlier version are untried, and the dead end's own source stays seen, so it is not taken
    again."""
    *rest, earlier = state["earlier_bests"]
    dead = best_version(state)
    append_event(
        state.get("trace_path"),
        "backtrack",
        reason=reason,
        dead_end_score=dead["score"],
        to_score=earlier["score"],
    )
    return {
        "best_source": earlier["source"],
        "best_score": earlier["score"],
        "best_verdict": earlier["verdict"],
        "best_report": earlier["report"],
        "earlier_bests": rest,
        "dead_ends": [dead],
        "backtracks": 1,
        "exhausted": False,
        "no_progress": 0,
        "feedback": f"Nothing gained from the best version ({reason}): going on from the version before it.",
    }
