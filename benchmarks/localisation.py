"""How often each source of a location points at the statement the fix changes.

Corpora whose cases carry `fixed.py` (near_miss, holdout, holdout2) say where the bug is: the candidate lines
the fix replaces or deletes, or, for a line the fix adds, the lines on either side of the gap. For every case
the candidate is evaluated (full tier) and located four ways:

- `hypothesis`: the `location` of the first evidence-backed diagnosis hypothesis that has one (static
  features);
- `report`: the localiser's ranking from the evaluation report alone (no recording);
- `recorded`: the localiser's ranking with both recordings (agreement with the reference);
- `region`: what the LLM's region question asks about when no knowledge-base pattern anchors a line.

A location hits at k when one of its first k statements (whole multi-line spans) holds a fix line. Only the
figures are printed (per corpus and overall); `--cases` lists each case's hit, for corpora already read.

    .venv/bin/python benchmarks/localisation.py benchmarks/near_miss [--json] [--cases]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from pathlib import Path
from typing import Any

from kernel_medic.tools.diagnosis.hypotheses import hypotheses
from kernel_medic.tools.diagnosis.localise import localise, rank_statements
from kernel_medic.tools.evaluation.cases import cases_for_tier
from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.repair.edit_space import statement_spans
from kernel_medic.tools.repair.llm_prompt import evidence_anchors
from kernel_medic.tools.repair.search import screening_tier

SOURCES = ("hypothesis", "report", "recorded", "region")


def fix_lines(candidate: str, fixed: str) -> set[int]:
    """1-based candidate lines the fix touches (both neighbours of an insertion)."""
    a, b = candidate.splitlines(), fixed.splitlines()
    out: set[int] = set()
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            out.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            out.update({i1, i1 + 1})
    return out


def spans_of(source: str, lines: list[int]) -> list[tuple[int, int]]:
    """The statement span holding each line, in order, without repeats."""
    spans = statement_spans(source)
    out: list[tuple[int, int]] = []
    for line in lines:
        span = next((s for s in spans if s[0] <= line <= s[1]), (line, line))
        if span not in out:
            out.append(span)
    return out


def hit_rank(spans: list[tuple[int, int]], truth: set[int]) -> int | None:
    """1-based rank of the first span holding a fix line."""
    for rank, (lo, hi) in enumerate(spans, 1):
        if any(lo <= t <= hi for t in truth):
            return rank
    return None


def locate(case: Path, evaluator: Evaluator) -> dict[str, Any]:
    problem = load_problem(case / "reference.py", case / "candidate.py")
    source = problem.candidate_source
    truth = fix_lines(source, (case / "fixed.py").read_text())
    report = evaluator.evaluate(problem, tier="full").to_dict()
    found: dict[str, list[int]] = {}
    ranked = hypotheses(report, source)
    found["hypothesis"] = [a.first for a in evidence_anchors(source, ranked, report)]
    found["report"] = rank_statements(source, report).lines
    # Recorded on the case the agent records on: the search's screening case (one that shows the bug).
    def evaluate(src: str, tier: str) -> dict[str, Any]:
        return evaluator.evaluate(problem.with_candidate(src), tier=tier).to_dict()

    tier, _ = screening_tier(source, evaluate, case.name, report)
    recording = cases_for_tier(tier, problem.config, problem.size_constants)[0]
    found["recorded"] = localise(problem, evaluator.pool, source, report, "cpu", recording).lines
    found["region"] = [a.first for a in evidence_anchors(source, ranked, report, found["recorded"])]
    ranks = {name: hit_rank(spans_of(source, lines), truth) for name, lines in found.items()}
    top = {name: lines[:3] for name, lines in found.items()}
    return {
        "case": case.name,
        "verdict": report.get("verdict"),
        "ranks": ranks,
        "truth": sorted(truth),
        "top": top,
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name in SOURCES:
        ranks = [r["ranks"].get(name) for r in rows]
        out[name] = {
            f"hit@{k}": round(sum(1 for x in ranks if x and x <= k) / max(1, len(rows)), 3) for k in (1, 3)
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="+", type=Path, help="corpus folders whose cases hold fixed.py")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cases", action="store_true", help="print each case's ranks (read corpora only)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result: dict[str, Any] = {}
    with Evaluator(workers=args.workers) as evaluator:
        for corpus in args.corpora:
            cases = sorted(p.parent for p in corpus.glob("*/fixed.py"))
            if not cases:
                print(f"localisation: no case with fixed.py under {corpus}", file=sys.stderr)
                return 2
            rows = []
            for i, case in enumerate(cases, 1):
                start = time.monotonic()
                try:
                    rows.append(locate(case, evaluator))
                except Exception as exc:  # one broken case must not lose the others' figures
                    rows.append({"case": case.name, "error": f"{type(exc).__name__}: {exc}", "ranks": {}})
                print(f"[{corpus.name} {i}/{len(cases)}] {time.monotonic() - start:.1f} s", file=sys.stderr)
            entry: dict[str, Any] = {"cases": len(rows), "hits": summary(rows)}
            if args.cases:
                entry["per_case"] = rows
            result[corpus.name] = entry
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for name, entry in result.items():
            print(f"{name} ({entry['cases']} cases)")
            for source, hits in entry["hits"].items():
                print(f"  {source:<10} hit@1 {hits['hit@1']:.0%}  hit@3 {hits['hit@3']:.0%}")
            for row in entry.get("per_case", []):
                print(f"    {row['case']}: {row.get('error') or row['ranks']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
