"""The loop's budgets and convergence checks, shared by the guard node and the audit router."""

from __future__ import annotations

from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.state import RepairState


def stop_reason(state: RepairState, config: RepairConfig) -> str | None:
    """Why the loop must stop now, or None to go on."""
    if state.get("error", "").startswith("llm_error"):
        return "llm_error"
    if state.get("llm_no_edit", 0) >= config.llm_no_edit_limit:
        return "llm_no_edit"
    if state.get("oscillation"):
        return "oscillation"
    if state.get("exhausted"):
        return "no_applicable_patch"
    if state.get("iterations", 0) >= config.max_iterations:
        return "max_iterations"
    if state.get("llm_calls", 0) >= config.max_llm_calls:
        return "max_llm_calls"
    if state.get("input_tokens", 0) + state.get("output_tokens", 0) >= config.max_tokens:
        return "max_tokens"
    if state.get("wall_s", 0.0) >= config.wall_budget_s:
        return "wall_budget"
    if state.get("no_progress", 0) >= config.no_progress_limit:
        return "no_progress"
    return None
