"""Whether a repair's kernels do mostly masked-off work: the gate refuses it, the search skips it."""

from __future__ import annotations

from typing import Any

WASTE_FACTOR = 4
"""A repair whose loads and stores run this many times the original's lanes, with a live share this many
times smaller, is refused as wasteful."""


def dead_lanes(original: dict[str, Any], repaired: dict[str, Any]) -> str | None:
    """Why the repaired kernels' memory lanes are mostly masked off where the original's were not, or None.

    Both are full-tier reports of the same problem; their cases are paired by name. A loop over every element
    where one over every tile was meant (`range(K)` over BLOCK_K tiles), or a program per element of a
    BLOCK-wide kernel, is correct and does BLOCK times the work: not a small honest fix. A repair that only
    adds programs or trips that do real work (a grid that now covers the output) keeps its live share.
    """
    before = {c["name"]: c for c in original.get("cases") or [] if c.get("lanes")}
    after = [c for c in repaired.get("cases") or [] if c.get("lanes") and c["name"] in before]
    pairs = [(before[c["name"]], c) for c in after]
    if not pairs:
        return None
    lanes = [sum(p[i]["lanes"] for p in pairs) for i in (0, 1)]
    live = [sum(p[i].get("live_lanes", 0) for p in pairs) / lanes[i] for i in (0, 1)]
    growth = lanes[1] / lanes[0]
    if growth < WASTE_FACTOR or live[1] * WASTE_FACTOR > live[0]:
        return None
    return (
        f"the repair runs {growth:.0f}x the original's load/store lanes and {live[1]:.1%} of them are live "
        f"(the original: {live[0]:.1%}): correct, but nearly all of its work is masked off (a loop over "
        "every element where one over every tile was meant, or a program per element)"
    )
