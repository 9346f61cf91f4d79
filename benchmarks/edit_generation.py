"""How long the offline engine takes to build its edit space, with the rules' `findall` against libcst's.

Every rule and mutation reads the candidate's tree through `findall` (tools/repair/rules/cst_find.py: each
tree walked once and indexed by node class). This runs `candidates()` (all rules, then the edit space at the
first statements) on each corpus candidate twice, once through our `findall` and once with libcst's put back
in every module that uses it, alternating the order per case, checks that both give the same edits in the
same order, and prints the time of each and their ratio. No kernel runs: this is the agent's own CPU time.

    .venv/bin/python benchmarks/edit_generation.py benchmarks/near_miss benchmarks/holdout6 [--every 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst.matchers as m
from kernel_medic.tools.repair.rules import cst_find
from kernel_medic.tools.repair.rules.base import RuleContext
from kernel_medic.tools.repair.search import candidates

STATEMENTS = 40
"""The edit space is generated at the first STATEMENTS lines, as if localisation ranked them."""


def _users() -> list[Any]:
    """The modules that call our `findall` (imported by `candidates` and the rule registry)."""
    import kernel_medic.tools.repair.rules.registry  # noqa: F401  (every rule module)

    return [
        mod
        for mod in list(sys.modules.values())
        if mod is not cst_find and getattr(mod, "findall", None) is cst_find.findall
    ]


def _timed(build: Callable[[], list[Any]]) -> tuple[float, list[tuple[str, int, str]]]:
    start = time.perf_counter()
    edits = build()
    return time.perf_counter() - start, [(rw.rule, rw.line, rw.source) for rw in edits]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+", type=Path, help="corpus folders (cases with candidate.py)")
    parser.add_argument("--every", type=int, default=1, help="take every Nth case (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error("--every must be at least 1")
    found = [p.parent for root in args.corpora for p in root.glob("*/candidate.py")]
    cases = sorted(case for case in found if (case / "reference.py").is_file())[:: args.every]
    if not cases:
        print(f"error: no cases with candidate.py and reference.py under {args.corpora}", file=sys.stderr)
        return 2
    users = _users()
    ours = {mod: mod.findall for mod in users}
    totals = {"ours": 0.0, "libcst": 0.0}
    edits = 0
    for i, case in enumerate(cases):
        source = (case / "candidate.py").read_text(encoding="utf-8")
        context = RuleContext.from_reference((case / "reference.py").read_text(encoding="utf-8"), None)
        lines = list(range(1, min(source.count("\n"), STATEMENTS) + 1))

        def build(source: str = source, context: RuleContext = context, at: list[int] = lines) -> list[Any]:
            return candidates(source, None, context, ranked_lines=at)

        results: dict[str, list[tuple[str, int, str]]] = {}
        for which in ("ours", "libcst") if i % 2 == 0 else ("libcst", "ours"):
            for mod in users:
                mod.findall = ours[mod] if which == "ours" else m.findall
            seconds, results[which] = _timed(build)
            totals[which] += seconds
        for mod in users:
            mod.findall = ours[mod]
        if results["ours"] != results["libcst"]:
            print(f"error: {case}: the edit spaces differ", file=sys.stderr)
            return 1
        edits += len(results["ours"])
        name = f"{case.parent.name}/{case.name}"
        print(f"[{i + 1}/{len(cases)}] {name}: {len(results['ours'])} edits", file=sys.stderr)
    summary = {
        "cases": len(cases),
        "edits": edits,
        "seconds_ours": round(totals["ours"], 2),
        "seconds_libcst": round(totals["libcst"], 2),
        "ratio_libcst_over_ours": round(totals["libcst"] / max(totals["ours"], 1e-9), 2),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"{summary['cases']} cases, {edits} edits (identical both ways): "
            f"ours {summary['seconds_ours']} s, libcst's findall {summary['seconds_libcst']} s, "
            f"ratio {summary['ratio_libcst_over_ours']}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
