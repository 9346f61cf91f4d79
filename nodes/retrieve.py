"""retrieve: the known failure patterns (and the rewrite rules that apply them) that fit the diagnosis."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import traced
from kernel_medic.graph.state import RepairState


@traced("retrieve")
def retrieve(state: RepairState) -> dict[str, Any]:
    ranked: list[str] = []
    for hypothesis in state.get("diagnosis") or []:
        ranked += [r for r in hypothesis["rules"] if r not in ranked]
    return {"pattern_ids": ranked}
