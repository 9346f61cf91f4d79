"""retrieve: the known failure patterns (and the rewrite rules that apply them) that fit the diagnosis."""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.rewrites import RULES


@traced("retrieve")
def retrieve(state: RepairState) -> dict[str, Any]:
    ranked: list[str] = []
    for hypothesis in state.get("diagnosis") or []:
        ranked += [r for r in hypothesis["rules"] if r not in ranked]
    # Until the knowledge base is wired in, the rules themselves are the known patterns.
    patterns = [
        {"id": r, "title": RULES[r].title, "bug_class": RULES[r].bug_class, "fix": RULES[r].title}
        for r in ranked
    ]
    return {"pattern_ids": ranked, "patterns": patterns, "rule_ids": ranked}
