"""`kmedic bench`: repair every case of a near-miss corpus and report the figures of merit.

Each finished (case, attempt) is written to `OUT/cases/` as soon as it ends, so a rerun skips it: a killed
bench loses at most the repairs that were in flight. The report is JSON, a Markdown table and a PNG.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_medic.tools.evaluation.corpus import CATEGORIES, CorpusCase
from kernel_medic.tools.evaluation.crashes import CRASH_VERDICTS
from kernel_medic.tools.trace import read_trace


@dataclass
class CaseOutcome:
    name: str
    category: str
    attempt: int
    status: str
    stop_reason: str
    score: float
    iterations: int
    llm_calls: int
    tokens: int
    wall_s: float
    diff_lines: int
    integrity_rejections: int  # fixes the loop accepted (they passed every test) but the gate refused
    looked_at: bool  # the case was read while writing rules (its rate is reported apart)
    error: str = ""
    start_verdict: str = ""  # the candidate's verdict as given
    final_verdict: str = ""  # the best version's verdict at the end
    crash_class: str = ""  # the candidate's crash class, when it crashed


RepairFn = Callable[[CorpusCase, int, Path], CaseOutcome]
ProgressFn = Callable[[int, int, CaseOutcome], None]


def run_bench(
    cases: list[CorpusCase],
    out: Path,
    repair_case: RepairFn,
    *,
    workers: int = 1,
    attempts: int = 1,
    progress: ProgressFn | None = None,
) -> list[CaseOutcome]:
    """Repair every (case, attempt) not already recorded under `out`, `workers` at a time."""
    (out / "cases").mkdir(parents=True, exist_ok=True)
    outcomes: list[CaseOutcome] = []
    todo: list[tuple[CorpusCase, int]] = []
    for case in cases:
        for attempt in range(attempts):
            done = _load(out, case.name, attempt)
            if done is not None:
                outcomes.append(done)
            else:
                todo.append((case, attempt))
    total = len(cases) * attempts
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(repair_case, case, attempt, out): (case, attempt) for case, attempt in todo}
        for future in as_completed(futures):
            case, attempt = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # one broken case must not sink the bench; it is recorded as failed
                outcome = _failed(case, attempt, f"{type(exc).__name__}: {exc}")
            _save(out, outcome)
            outcomes.append(outcome)
            if progress is not None:
                progress(len(outcomes), total, outcome)
    return sorted(outcomes, key=lambda o: (o.name, o.attempt))


def integrity_rejections(trace_path: str) -> int:
    """Audits that refused a version which had passed the full tier."""
    try:
        events = read_trace(trace_path)
    except (OSError, ValueError):
        return 0
    return sum(
        1
        for e in events
        if e["event"] == "node_end"
        and e["node"] == "audit"
        and (e["delta"].get("integrity") or {}).get("verdict") not in (None, "clean")
    )


def summarize(outcomes: list[CaseOutcome], attempts: int) -> dict[str, Any]:
    by_case: dict[str, list[CaseOutcome]] = {}
    for o in outcomes:
        by_case.setdefault(o.name, []).append(o)
    firsts = [sorted(v, key=lambda o: o.attempt)[0] for v in by_case.values()]
    successes = [o for o in outcomes if o.status == "repaired"]

    def rate(group: list[CaseOutcome]) -> float:
        return round(sum(o.status == "repaired" for o in group) / len(group), 4) if group else 0.0

    def pass_at_k(names: list[str]) -> float:
        if not names:
            return 0.0
        return round(sum(any(o.status == "repaired" for o in by_case[n]) for n in names) / len(names), 4)

    categories = {}
    for category in CATEGORIES:
        group = [o for o in firsts if o.category == category]
        if group:
            categories[category] = {
                "cases": len(group),
                "pass_at_1": rate(group),
                "repaired": sum(o.status == "repaired" for o in group),
            }
    crashed = [o for o in firsts if o.start_verdict in CRASH_VERDICTS]
    unseen = [o for o in firsts if not o.looked_at]
    seen = [o for o in firsts if o.looked_at]
    return {
        "cases": len(firsts),
        "attempts": attempts,
        "pass_at_1": rate(firsts),
        f"pass_at_{attempts}": pass_at_k(list(by_case)),
        "pass_at_1_not_looked_at": rate(unseen),
        "cases_not_looked_at": len(unseen),
        "pass_at_1_looked_at": rate(seen),
        "cases_looked_at": len(seen),
        "categories": categories,
        "median_wall_s": _median([o.wall_s for o in firsts]),
        "max_wall_s": max((o.wall_s for o in firsts), default=0.0),
        "median_wall_s_per_success": _median([o.wall_s for o in successes]),
        "mean_iterations_per_success": _mean([o.iterations for o in successes]),
        # Cost per success counts every call spent, the failed cases' too (as the paper does).
        "llm_tokens_per_success": _per(sum(o.tokens for o in outcomes), len(successes)),
        "llm_calls_per_success": _per(sum(o.llm_calls for o in outcomes), len(successes)),
        "integrity_rejections": sum(o.integrity_rejections for o in outcomes),
        "cases_with_integrity_rejections": sum(o.integrity_rejections > 0 for o in firsts),
        "median_diff_lines": _median([o.diff_lines for o in successes]),
        "max_diff_lines": max((o.diff_lines for o in successes), default=0),
        "stop_reasons": _counts(o.stop_reason for o in firsts),
        # Crashes as given: how many ended passing, and how many were fixed into near-misses (no crash left).
        "crashes": len(crashed),
        "crashes_repaired": sum(o.status == "repaired" for o in crashed),
        "crashes_to_near_miss": sum(_near_miss(o) for o in crashed),
        "crash_classes": _counts(o.crash_class for o in crashed),
        "outcomes": [asdict(o) for o in sorted(outcomes, key=lambda o: (o.name, o.attempt))],
    }


def write_report(summary: dict[str, Any], out: Path, title: str) -> dict[str, str]:
    """report.json, report.md and report.png under `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "markdown": out / "report.md", "png": out / "report.png"}
    paths["json"].write_text(json.dumps(summary, indent=2) + "\n")
    paths["markdown"].write_text(markdown(summary, title))
    _plot(summary, paths["png"])
    return {k: str(v) for k, v in paths.items()}


def markdown(summary: dict[str, Any], title: str) -> str:
    k = summary["attempts"]
    lines = [
        f"# {title}",
        "",
        f"- Pass@1: **{summary['pass_at_1']:.1%}** of {summary['cases']} cases"
        + (f"; Pass@{k}: {summary[f'pass_at_{k}']:.1%}" if k > 1 else ""),
        f"- Pass@1 on cases not looked at while writing rules: {summary['pass_at_1_not_looked_at']:.1%} "
        f"({summary['cases_not_looked_at']} cases); on cases looked at: {summary['pass_at_1_looked_at']:.1%} "
        f"({summary['cases_looked_at']} cases)",
        f"- Median wall time per case: {summary['median_wall_s']:.1f} s; per success: "
        f"{summary['median_wall_s_per_success']:.1f} s; iterations per success: "
        f"{summary['mean_iterations_per_success']:.2f}; longest case: {summary.get('max_wall_s', 0.0):.1f} s",
        f"- LLM calls / tokens per success: {summary['llm_calls_per_success']:.2f} / "
        f"{summary['llm_tokens_per_success']:.0f}",
        "- Integrity rejections (accepted by the loop, refused by the gate): "
        f"{summary['integrity_rejections']} in {summary['cases_with_integrity_rejections']} cases",
        f"- Diff size of repairs: median {summary['median_diff_lines']} lines, "
        f"max {summary['max_diff_lines']}",
        f"- Stop reasons: {', '.join(f'{k}: {v}' for k, v in summary['stop_reasons'].items())}",
    ]
    if summary.get("crashes"):
        lines.append(
            f"- Crashes as given: {summary['crashes']}; repaired {summary['crashes_repaired']}, fixed into "
            f"near-misses {summary['crashes_to_near_miss']}; classes: "
            + ", ".join(f"{k or 'unclassified'}: {v}" for k, v in summary["crash_classes"].items())
        )
    regen = summary.get("regenerate")
    if regen:
        n = regen["attempts"]
        lines.append(
            "- Regenerate baseline (fresh kernels from the reference, same judge): "
            f"Pass@1 {regen['pass_at_1']:.1%}, Pass@{n} {regen[f'pass_at_{n}']:.1%}, "
            f"LLM tokens per success {regen['llm_tokens_per_success']}"
        )
    lines += [
        "",
        "| category | cases | repaired | Pass@1 |",
        "|---|---:|---:|---:|",
    ]
    for category, row in summary["categories"].items():
        lines.append(f"| {category} | {row['cases']} | {row['repaired']} | {row['pass_at_1']:.0%} |")
    lines += [
        "",
        "| case | status | stop reason | verdict: given → best | score | iterations | diff lines | wall s |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for o in summary["outcomes"]:
        if o["attempt"] == 0:
            verdicts = f"{o.get('start_verdict') or '?'} → {o.get('final_verdict') or '?'}"
            lines.append(
                f"| {o['name']} | {o['status']} | {o['stop_reason']} | {verdicts} | {o['score']:.4f} | "
                f"{o['iterations']} | {o['diff_lines']} | {o['wall_s']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def progress_bar(stream: Any = sys.stderr) -> ProgressFn:
    start = time.monotonic()
    repaired = 0

    def show(done: int, total: int, outcome: CaseOutcome) -> None:
        nonlocal repaired
        repaired += outcome.status == "repaired"
        elapsed = time.monotonic() - start
        eta = elapsed / done * (total - done) if done else 0.0
        width = 24
        filled = int(width * done / total) if total else width
        stream.write(
            f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} repaired {repaired} "
            f"| {outcome.name}: {outcome.status} ({outcome.wall_s:.1f} s) | ETA {eta:.0f} s\n"
        )
        stream.flush()

    return show


def _plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display on CI machines
    import matplotlib.pyplot as plt

    cats = list(summary["categories"])
    rates = [summary["categories"][c]["pass_at_1"] * 100 for c in cats]
    per_cat_wall = []
    for c in cats:
        walls = [o["wall_s"] for o in summary["outcomes"] if o["category"] == c and o["status"] == "repaired"]
        per_cat_wall.append(statistics.median(walls) if walls else 0.0)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    left.barh(cats, rates, color="#4c72b0")
    left.set_xlim(0, 100)
    left.set_xlabel("Pass@1 (%)")
    left.set_title("Repair rate per category")
    right.barh(cats, per_cat_wall, color="#dd8452")
    right.set_xlabel("median wall seconds per success")
    right.set_title("Cost per success")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _save(out: Path, outcome: CaseOutcome) -> None:
    path = out / "cases" / f"{outcome.name}.attempt{outcome.attempt}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(outcome)))
    os.replace(tmp, path)  # atomic: a killed bench never leaves a half-written record


def _load(out: Path, name: str, attempt: int) -> CaseOutcome | None:
    path = out / "cases" / f"{name}.attempt{attempt}.json"
    if not path.exists():
        return None
    try:
        return CaseOutcome(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None


def _failed(case: CorpusCase, attempt: int, error: str) -> CaseOutcome:
    return CaseOutcome(
        case.name,
        case.category,
        attempt,
        "error",
        "exception",
        0.0,
        0,
        0,
        0,
        0.0,
        0,
        0,
        getattr(case, "looked_at", False),
        error,
    )


def _near_miss(outcome: CaseOutcome) -> bool:
    return outcome.status != "repaired" and outcome.final_verdict == "mismatch"


def _per(total: float, count: int) -> float:
    return round(total / count, 3) if count else 0.0


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 3) if values else 0.0


def _counts(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))
