"""Do the judge's verdicts hold on another device? Judge a corpus's kernels there and compare.

The repair loop verifies on the device it runs on; on this project's CPU machine that is Triton's
interpreter. This judges, on the full tier, each case's `candidate.py` (a near-miss: expected to fail; a
case of `benchmarks/correct`: expected to pass), its `fixed.py` where it has one (expected to pass) and,
with `--repaired DIR`, the repaired source `DIR/<case>.py` a bench produced (expected to pass). With
`--baseline` (this script's `--json` output from another device) it lists where the two devices disagree.

    .venv/bin/python benchmarks/device_check.py benchmarks/near_miss benchmarks/correct --device cpu \
        --json > cpu.json
    python benchmarks/device_check.py benchmarks/near_miss benchmarks/correct --device cuda \
        --baseline cpu.json --json > cuda.json

Only figures and case names are printed; a `--json` row also carries the first line of any error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import InvalidProblem, load_problem


def expected_verdict(corpus: Path, kind: str) -> str:
    """What a right judge says: fixes and repairs pass; a corpus's candidates fail unless it is `correct`."""
    if kind != "candidate" or corpus.name == "correct":
        return "pass"
    return "fail"


def entries(corpora: list[Path], repaired: list[Path]) -> list[dict[str, Any]]:
    """(corpus, case, kind, source path) for every kernel to judge, in a stable order."""
    sources = {p.stem: p for folder in repaired for p in sorted(folder.glob("*.py"))}
    out = []
    for corpus in corpora:
        for case in sorted(p.parent for p in corpus.glob("*/candidate.py")):
            kinds = [("candidate", case / "candidate.py")]
            if (case / "fixed.py").is_file():
                kinds.append(("fixed", case / "fixed.py"))
            if case.name in sources:
                kinds.append(("repaired", sources[case.name]))
            for kind, path in kinds:
                out.append({"corpus": corpus.name, "case": case.name, "kind": kind, "path": str(path)})
    return out


def judge(evaluator: Evaluator, entry: dict[str, Any]) -> dict[str, Any]:
    case_dir = Path(entry["corpus_path"]) / entry["case"]
    start = time.monotonic()
    row = {k: entry[k] for k in ("corpus", "case", "kind")}
    row["expected"] = expected_verdict(Path(entry["corpus_path"]), entry["kind"])
    try:
        problem = load_problem(case_dir / "reference.py", case_dir / "candidate.py")
        problem = problem.with_candidate(Path(entry["path"]).read_text())
        report = evaluator.evaluate(problem, tier="full")
        row["verdict"] = report.verdict
        crashes = [c.crash for c in report.cases if c.crash]
        row["crash"] = crashes[0] if crashes else ""
        counted = [c for c in report.cases if c.counted and c.max_abs_err is not None]
        worst = max((c.max_abs_err for c in counted), default=None)
        row["max_abs_err"] = worst if worst is None or math.isfinite(worst) else str(worst)
        row["error"] = (report.error or "").strip().splitlines()[0][:300] if report.error else ""
    except InvalidProblem as exc:
        row.update(verdict="invalid_problem", crash="", max_abs_err=None, error=str(exc)[:300])
    row["agrees"] = (row["verdict"] == "pass") == (row["expected"] == "pass")
    row["wall_s"] = round(time.monotonic() - start, 2)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="+", type=Path, help="corpus folders (case folders with candidate.py)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda", "npu"))
    ap.add_argument("--repaired", action="append", type=Path, default=[], help="folder of <case>.py repairs")
    ap.add_argument("--workers", type=int, default=None, help="sandboxed workers (default: CPU count)")
    ap.add_argument("--baseline", type=Path, help="this script's --json output from another device")
    ap.add_argument("--rows", type=Path, help="also write each row to this JSON Lines file as it is judged")
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    args = ap.parse_args(argv)
    for folder in [*args.corpora, *args.repaired]:
        if not folder.is_dir():
            print(f"device_check: {folder} is not a folder", file=sys.stderr)
            return 2
    todo = entries(args.corpora, args.repaired)
    by_name = {c.name: c for c in args.corpora}
    for entry in todo:
        entry["corpus_path"] = str(by_name[entry["corpus"]])
    rows: list[dict[str, Any]] = []
    start = time.monotonic()
    sink = args.rows.open("w") if args.rows else None
    with Evaluator(device=args.device, workers=args.workers) as evaluator:
        # Evaluations wait on sandboxed workers: a few in flight keep every worker busy.
        with ThreadPoolExecutor(max_workers=max(2, evaluator.pool.size)) as threads:
            futures = [threads.submit(judge, evaluator, e) for e in todo]
            for i, future in enumerate(as_completed(futures), 1):
                row = future.result()
                rows.append(row)
                if sink:  # a run cut short keeps every row judged so far
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                mark = "" if row["agrees"] else "  <- not as expected"
                where = f"{row['corpus']}/{row['case']} {row['kind']}"
                print(f"[{i}/{len(todo)}] {where}: {row['verdict']}{mark}", file=sys.stderr)
    if sink:
        sink.close()
    order = {(e["corpus"], e["case"], e["kind"]): i for i, e in enumerate(todo)}
    rows.sort(key=lambda r: order[(r["corpus"], r["case"], r["kind"])])
    summary = summarise(rows, args.device, time.monotonic() - start)
    if args.baseline:
        summary["against_baseline"] = compare(rows, json.loads(args.baseline.read_text()))
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}))
    else:
        print(json.dumps(summary, indent=2))
    return 0


def summarise(rows: list[dict[str, Any]], device: str, wall_s: float) -> dict[str, Any]:
    groups: dict[str, dict[str, int]] = {}
    for row in rows:
        g = groups.setdefault(f"{row['corpus']}/{row['kind']}", {"judged": 0, "as_expected": 0})
        g["judged"] += 1
        g["as_expected"] += row["agrees"]
    return {
        "device": device,
        "wall_s": round(wall_s, 1),
        "groups": groups,
        "unexpected": [
            f"{r['corpus']}/{r['case']} {r['kind']}: {r['verdict']}" for r in rows if not r["agrees"]
        ],
    }


def compare(rows: list[dict[str, Any]], baseline: dict[str, Any]) -> list[str]:
    """Entries whose pass/fail differs from the baseline's, or whose failure is of another verdict."""
    before = {(r["corpus"], r["case"], r["kind"]): r["verdict"] for r in baseline["rows"]}
    out = []
    for row in rows:
        old = before.get((row["corpus"], row["case"], row["kind"]))
        if old is not None and old != row["verdict"]:
            out.append(f"{row['corpus']}/{row['case']} {row['kind']}: {old} -> {row['verdict']}")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
