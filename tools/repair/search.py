"""Score-guided search over rewrites: screen candidate edits on the light tier in parallel, keep the best.

`screen` ranks one batch of edits of one source (the offline patcher's step inside the repair graph);
`best_first` is the whole search on its own (frontier ordered by the full-tier score, partial progress kept),
for callers outside the graph such as benchmarks.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kernel_medic.tools.repair.edits import diff_stats
from kernel_medic.tools.repair.mutations import mutate
from kernel_medic.tools.repair.rules.base import Rewrite, RuleContext
from kernel_medic.tools.repair.rules.registry import propose
from kernel_medic.tools.trace import source_hash

EvaluateFn = Callable[[str, str], dict[str, Any]]
"""(source, tier) -> the evaluation report as a dict (verdict, score, cases)."""

_CACHE_SIZE = 4096
_cache: dict[tuple[str, str], tuple[str, float]] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class Screened:
    rewrite: Rewrite
    verdict: str
    light: float  # share of correct elements on the light case (1.0 when it passes)
    size: int  # original lines touched

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def light_score(report: dict[str, Any]) -> float:
    """Share of correct elements on the seed case (the light tier's one case); 1.0 for a pass."""
    if report.get("verdict") == "pass" and report.get("tier") == "light":
        return 1.0
    for case in report.get("cases") or []:
        if str(case.get("name", "")).startswith("seed"):
            numel = case.get("numel") or 0
            return (case.get("correct") or 0) / numel if numel else 0.0
    return 0.0


def edit_size(before: str, after: str) -> int:
    stats = diff_stats(before, after)
    return max(stats["added"], stats["removed"])


def _light(source: str, evaluate: EvaluateFn, namespace: str) -> tuple[str, float]:
    key = (namespace, source_hash(source))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    try:
        report = evaluate(source, "light")
        result = (str(report.get("verdict", "error")), light_score(report))
    except Exception as exc:  # a candidate that breaks the evaluator ranks last, the search goes on
        result = (f"error: {type(exc).__name__}", -1.0)
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = result
    return result


def _full(source: str, evaluate: EvaluateFn, namespace: str) -> tuple[str, float]:
    key = (f"full:{namespace}", source_hash(source))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    try:
        report = evaluate(source, "full")
        result = (str(report.get("verdict", "error")), float(report.get("score", 0.0)))
    except Exception as exc:  # as in _light: a broken candidate ranks last
        result = (f"error: {type(exc).__name__}", -1.0)
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = result
    return result


def known_full(source: str, namespace: str = "") -> tuple[str, float] | None:
    """The cached full-tier (verdict, score) of a source, if `verify_full` has run it."""
    with _cache_lock:
        return _cache.get((f"full:{namespace}", source_hash(source)))


def verify_full(
    rewrites: Sequence[Rewrite], evaluate: EvaluateFn, workers: int = 1, namespace: str = ""
) -> list[tuple[Rewrite, str, float]]:
    """Full-tier (rewrite, verdict, score) of each rewrite, in parallel and cached like `screen`."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(lambda rw: _full(rw.source, evaluate, namespace), rewrites))
    return [(rw, verdict, score) for rw, (verdict, score) in zip(rewrites, results, strict=True)]


def screen(
    base: str, rewrites: Sequence[Rewrite], evaluate: EvaluateFn, workers: int = 1, namespace: str = ""
) -> list[Screened]:
    """Light-tier results of every rewrite, best first: passes, highest light score, smallest edit, order.

    Results are cached per `namespace` (the problem) and source, so a later round never re-runs an edit.
    """
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(lambda rw: _light(rw.source, evaluate, namespace), rewrites))
    scored = [
        (Screened(rw, verdict, light, edit_size(base, rw.source)), i)
        for i, (rw, (verdict, light)) in enumerate(zip(rewrites, results, strict=True))
    ]
    scored.sort(key=lambda item: (not item[0].passed, -item[0].light, item[0].size, item[1]))
    return [s for s, _ in scored]


def candidates(
    source: str,
    rule_ids: Sequence[str] | None = None,
    context: RuleContext | None = None,
    mutations: bool = True,
    lines: Sequence[tuple[int, int]] | None = None,
    kernels: Sequence[str] | None = None,
) -> list[Rewrite]:
    """Rule rewrites in the given order (the rest of the rules after), then mutations where pointed."""
    from kernel_medic.tools.repair.rules.registry import RULES

    order = [r for r in (rule_ids or []) if r in RULES]
    order += [r for r in RULES if r not in order]
    found = propose(source, order, context)
    if mutations:
        seen = {rw.source for rw in found}
        found += [
            rw
            for rw in mutate(source, lines=lines, kernels=kernels, context=context)
            if rw.source not in seen
        ]
    return found


@dataclass
class SearchResult:
    source: str
    verdict: str
    score: float
    path: list[Rewrite] = field(default_factory=list)  # the edits from the original, in order
    evaluations: int = 0

    @property
    def repaired(self) -> bool:
        return self.verdict == "pass"


def best_first(
    source: str,
    evaluate: EvaluateFn,
    *,
    rule_ids: Sequence[str] | None = None,
    context: RuleContext | None = None,
    max_evaluations: int = 200,
    workers: int = 1,
    namespace: str = "",
    tie_budget: int = 2,
) -> SearchResult:
    """Best-first search: expand the best-scoring version, screen its edits, verify the promising ones fully.

    An edit that raises the full-tier score joins the frontier, so a second bug is fixed on top of the first.
    """
    root = evaluate(source, "full")
    best = SearchResult(source, str(root.get("verdict")), float(root.get("score", 0.0)), [], 1)
    if best.repaired:
        return best
    tie = itertools.count()
    frontier = [(-best.score, 0, next(tie), source, light_score(root), [])]
    seen = {source_hash(source)}
    while frontier and best.evaluations < max_evaluations:
        neg_score, size, _, current, base_light, path = heapq.heappop(frontier)
        fresh = [rw for rw in candidates(current, rule_ids, context) if source_hash(rw.source) not in seen]
        fresh = fresh[: max(0, max_evaluations - best.evaluations)]
        seen.update(source_hash(rw.source) for rw in fresh)
        best.evaluations += len(fresh)
        ties = 0
        for item in screen(current, fresh, evaluate, workers, namespace):
            if best.evaluations >= max_evaluations or item.light < base_light or item.light < 0:
                break
            if not item.passed and item.light == base_light:
                # An edit the light case does not reward may still fix another case: try only the first few.
                ties += 1
                if ties > tie_budget:
                    break
            report = evaluate(item.rewrite.source, "full")
            best.evaluations += 1
            score = float(report.get("score", 0.0))
            passed = report.get("verdict") == "pass"
            if score <= -neg_score and not passed:
                continue
            new_path = [*path, item.rewrite]
            if score > best.score or passed:
                best = SearchResult(
                    item.rewrite.source, str(report.get("verdict")), score, new_path, best.evaluations
                )
            if best.repaired:
                return best
            heapq.heappush(
                frontier, (-score, size + item.size, next(tie), item.rewrite.source, item.light, new_path)
            )
    return best
