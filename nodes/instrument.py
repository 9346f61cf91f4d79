"""instrument: after the first failed fix, localise where the best version still goes wrong.

This first version localises by input variant: which seeds, value distributions, shapes and layouts fail,
and the error pattern of each — the evidence that separates tail, magnitude, layout and spec bugs.
"""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import traced
from kernel_medic.graph.state import RepairState


@traced("instrument")
def instrument(state: RepairState) -> dict[str, Any]:
    report = state.get("best_report") or {}
    cases = report.get("cases") or []
    failing = [c for c in cases if c.get("verdict") != "pass"]
    finding = {
        "kind": "variant_localisation",
        "failing": [c["name"] for c in failing],
        "passing": [c["name"] for c in cases if c.get("verdict") == "pass"],
        "patterns": {c["name"]: c.get("pattern") for c in failing},
        "first_failing": failing[0]["name"] if failing else None,
    }
    return {"instrumentation": [finding]}
