"""Score-guided search over rewrites: screen candidate edits on the light tier in parallel, keep the best.

`screen` ranks one batch of edits of one source: the offline patcher's step inside the repair graph, whose
loop keeps partial progress (a second bug is fixed on top of the first).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from kernel_medic.tools.evaluation.mismatch import closer, distance
from kernel_medic.tools.evaluation.waste import dead_lanes
from kernel_medic.tools.repair.edit_space import generate
from kernel_medic.tools.repair.edits import diff_stats
from kernel_medic.tools.repair.mutations import MUTATIONS, kernel_spans, mutate
from kernel_medic.tools.repair.rules.base import Rewrite, RuleContext
from kernel_medic.tools.repair.rules.registry import propose
from kernel_medic.tools.repair.size_terms import sizing_lines
from kernel_medic.tools.trace import source_hash

EvaluateFn = Callable[[str, str], dict[str, Any]]
"""(source, tier) -> the evaluation report as a dict (verdict, score, cases)."""

SCREENING: ContextVar[Rewrite | None] = ContextVar("screening", default=None)
"""The edit being screened in this thread, for the evaluator's trace (which rule, which line)."""
_CACHE_SIZE = 4096
_cache: dict[tuple[str, str], tuple[str, float]] = {}
_cache_lock = threading.Lock()
_passing: dict[tuple[str, str], frozenset[str]] = {}
"""Full-tier cases each source passes (same keys as the full entries of `_cache`)."""
_distances: dict[tuple[str, str], float] = {}
"""Screening distance of each screened source (same keys as its `_cache` entry): ties on the share of correct
elements are broken by how near the numbers are, so of two bugs the one whose fix alone helps ranks first."""
_costs: dict[tuple[str, str], tuple[float, int]] = {}
"""Seconds each screening took (same keys): of two edits with the same result, the one whose kernel does not
launch a program per element is the fix (a grid of n programs also covers a tail, at n times the work)."""
_reports: dict[tuple[str, str], dict[str, Any]] = {}
"""The verdict and per-case distances of each full-tier report (same keys), for `closer` at equal scores."""
_whole: dict[tuple[str, str], dict[str, Any]] = {}
"""The last few whole full-tier reports (same keys): the one of the edit proposed is its verification."""
_WHOLE_KEPT = 32


@dataclass(frozen=True)
class Screened:
    rewrite: Rewrite
    verdict: str
    light: float  # share of correct elements on the light case (1.0 when it passes)
    size: int  # original lines touched
    distance: float = 4.0  # how far its wrong numbers are from the reference (mismatch.distance; 4: unknown)
    cost: float = 0.0  # CPU seconds its screening took (wall seconds where the CPU time is unknown)
    work: int = 0  # elements its kernels computed on the screening case (0: unknown, not interpreted)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def light_score(report: dict[str, Any]) -> float:
    """Share of correct elements on the seed case (the light tier's one case); 1.0 for a pass.

    A micro report's one case stands for the seed case; uncounted there (a shape outside the kernel's domain)
    it scores -1, which screens as "cannot judge here", never as a pass.
    """
    tier = report.get("tier")
    if tier == "micro":
        cases = report.get("cases") or []
        for case in cases:
            if str(case.get("name", "")).startswith(("micro", "seed")) and case.get("counted", True):
                return _share(case)
        # The micro shape is outside the kernel's domain (a power-of-2-only block, say): the micro tier's
        # other small shapes still judge it.
        counted = [c for c in cases if c.get("counted", True)]
        return sum(_share(c) for c in counted) / len(counted) if counted else -1.0
    if str(tier).startswith("case:"):
        counted = [c for c in report.get("cases") or [] if c.get("counted", True)]
        return _share(counted[0]) if counted else -1.0
    if report.get("verdict") == "pass" and tier == "light":
        return 1.0
    for case in report.get("cases") or []:
        if str(case.get("name", "")).startswith("seed"):
            numel = case.get("numel") or 0
            return (case.get("correct") or 0) / numel if numel else 0.0
    return 0.0


def _share(case: dict[str, Any]) -> float:
    if case.get("verdict") == "pass":
        return 1.0
    numel = case.get("numel") or 0
    return (case.get("correct") or 0) / numel if numel else 0.0


def edit_size(before: str, after: str) -> int:
    stats = diff_stats(before, after)
    return max(stats["added"], stats["removed"])


def _light(source: str, evaluate: EvaluateFn, namespace: str, tier: str = "light") -> tuple[str, float]:
    key = (namespace if tier == "light" else f"{tier}:{namespace}", source_hash(source))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    far = 4.0
    cut_short = False
    cost, work = 0.0, 0
    try:
        report = evaluate(source, tier)
        cut_short = bool(report.get("cut_short"))
        cost = float(report.get("cpu_s") or report.get("wall_s") or 0.0)
        work = int(report.get("work") or 0)
        result = (str(report.get("verdict", "error")), light_score(report))
        known = distance(report)
        far = 4.0 if known is None else known
    except Exception as exc:  # a candidate that breaks the evaluator ranks last, the search goes on
        result = (f"error: {type(exc).__name__}", -1.0)
    if tier == "micro" and result[1] < 0 and not result[0].startswith("error"):
        result = _light(source, evaluate, namespace, "light")  # the micro shape cannot judge this edit
        far = screened_distance(source, namespace, "light")
    if cut_short:
        return result  # out of time, not a result: a later proposal may run it again
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        if len(_distances) >= _CACHE_SIZE:
            _distances.pop(next(iter(_distances)))
        if len(_costs) >= _CACHE_SIZE:
            _costs.pop(next(iter(_costs)))
        _cache[key] = result
        _distances[key] = far
        _costs[key] = (cost, work)
    return result


def screened_distance(source: str, namespace: str = "", tier: str = "light") -> float:
    """The screening distance `_light` recorded for a source (4.0 when unknown)."""
    key = (namespace if tier == "light" else f"{tier}:{namespace}", source_hash(source))
    with _cache_lock:
        return _distances.get(key, 4.0)


def screened_cost(source: str, namespace: str = "", tier: str = "light") -> tuple[float, int]:
    """The CPU seconds and interpreted work `_light` recorded for a source's screening ((0.0, 0): unknown)."""
    key = (namespace if tier == "light" else f"{tier}:{namespace}", source_hash(source))
    with _cache_lock:
        return _costs.get(key, (0.0, 0))


def _full(source: str, evaluate: EvaluateFn, namespace: str) -> tuple[str, float]:
    key = (f"full:{namespace}", source_hash(source))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    passing: frozenset[str] = frozenset()
    summary: dict[str, Any] = {}
    try:
        report = evaluate(source, "full")
        result = (str(report.get("verdict", "error")), float(report.get("score", 0.0)))
        passing = passing_cases(report)
        summary = _summary(report)
    except Exception as exc:  # as in _light: a broken candidate ranks last
        result = (f"error: {type(exc).__name__}", -1.0)
        report = {}
    if report.get("cut_short"):
        return result  # as in _light: out of time is not a result to keep
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        if len(_passing) >= _CACHE_SIZE:
            _passing.pop(next(iter(_passing)))
        if len(_reports) >= _CACHE_SIZE:
            _reports.pop(next(iter(_reports)))
        _cache[key] = result
        _passing[key] = passing
        _reports[key] = summary
        if not any(case.get("verdict") == "timeout" for case in report.get("cases") or []):
            # A case's time limit may have been cut for the screening: its timeout is not the judge's.
            if len(_whole) >= _WHOLE_KEPT:
                _whole.pop(next(iter(_whole)))
            _whole[key] = report
    return result


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    keep = ("name", "counted", "rel_l2", "lanes", "live_lanes")
    return {
        "verdict": report.get("verdict"),
        "score": report.get("score", 0.0),
        "cases": [{k: c.get(k) for k in keep if k in c} for c in report.get("cases") or []],
    }


def wasteful(source: str, base_report: dict[str, Any], namespace: str = "") -> bool:
    """Whether a verified source's kernels leave most of their lanes masked off where the base's did not:
    the gate would refuse it as `dead_lanes`, so the search does not propose it."""
    with _cache_lock:
        mine = _reports.get((f"full:{namespace}", source_hash(source)))
    return bool(mine) and dead_lanes(base_report, mine or {}) is not None


def comes_closer(source: str, base_report: dict[str, Any], namespace: str = "") -> bool:
    """Whether a verified source's numbers are much nearer the reference than the base's (`closer`)."""
    with _cache_lock:
        mine = _reports.get((f"full:{namespace}", source_hash(source)))
    return bool(mine) and closer(base_report, mine or {})


def passing_cases(report: dict[str, Any]) -> frozenset[str]:
    """Names of the counted cases a report passes."""
    return frozenset(
        str(case.get("name"))
        for case in report.get("cases") or []
        if case.get("verdict") == "pass" and case.get("counted", True)
    )


def fixes_cases(source: str, base_report: dict[str, Any], namespace: str = "") -> bool:
    """Whether a verified source passes every case the base passes and at least one it fails.

    Whole input variants fixed with none broken is progress however few elements they hold (a tail fixed
    while a layout bug still ruins another variant barely moves the score).
    """
    with _cache_lock:
        mine = _passing.get((f"full:{namespace}", source_hash(source)))
    if not mine or not base_report.get("cases"):
        return False
    base = passing_cases(base_report)
    return base < mine


def full_report(source: str, namespace: str = "") -> dict[str, Any] | None:
    """The whole full-tier report `verify_full` recorded for a source (None: not run, no longer kept, or a
    case ran out of a time limit that may have been cut short)."""
    with _cache_lock:
        return _whole.get((f"full:{namespace}", source_hash(source)))


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


def known_screen(source: str, namespace: str = "", tier: str = "light") -> tuple[str, float] | None:
    """The cached screening (verdict, score) of a source on `tier`, if `screen` has run it."""
    with _cache_lock:
        return _cache.get((namespace if tier == "light" else f"{tier}:{namespace}", source_hash(source)))


def screening_tier(
    base: str, evaluate: EvaluateFn, namespace: str = "", report: dict[str, Any] | None = None
) -> tuple[str, float]:
    """The tier to screen edits of `base` on and the base's score there.

    The micro tier when it shows the bug (the base fails it and it can be judged): it is many times cheaper
    than the light case, so hundreds of edits fit the budget. Otherwise the light case when it shows the bug;
    when it does not either (only large magnitudes, another shape or a layout fail), the smallest case the
    base's full `report` fails: a screening case the base passes cannot tell a fix from a no-op.
    """
    failing = _failing_case(report or {})
    # The failing case is part of the key: a caller without a report must not fix the tier for one with it.
    key = (f"tier:{namespace}:{failing or ''}", source_hash(base))
    with _cache_lock:
        known = _cache.get(key)
    if known is not None:
        return known
    try:
        micro_report = evaluate(base, "micro")
        micro = light_score(micro_report), micro_report.get("verdict")
    except Exception:  # the micro shape breaks the evaluator for this problem: screen on the light case
        micro = -1.0, "error"
    if micro[1] != "pass" and 0 <= micro[0] < 1.0:
        result = ("micro", micro[0])
        _light(base, evaluate, namespace, "micro")  # cached: the base's own screening score
    else:
        result = ("light", _light(base, evaluate, namespace, "light")[1])
        if result[1] >= 1.0 and failing:
            shown = _light(base, evaluate, namespace, f"case:{failing}")
            if 0 <= shown[1] < 1.0:
                result = (f"case:{failing}", shown[1])
    with _cache_lock:
        _cache[key] = result  # type: ignore[assignment]
    return result


def _failing_case(report: dict[str, Any]) -> str | None:
    """The smallest counted case a full-tier report fails (not a timeout: that case is no cheap screen)."""
    if report.get("tier") != "full":
        return None
    failed = [
        c
        for c in report.get("cases") or []
        if c.get("counted", True) and c.get("verdict") not in ("pass", "timeout") and c.get("name")
    ]
    return str(min(failed, key=lambda c: c.get("numel") or 0)["name"]) if failed else None


def screen(
    base: str,
    rewrites: Sequence[Rewrite],
    evaluate: EvaluateFn,
    workers: int = 1,
    namespace: str = "",
    tier: str = "light",
) -> list[Screened]:
    """Screening results of every rewrite on `tier`, best first: passes, highest score, nearest numbers,
    smallest edit, order.

    Results are cached per `namespace` (the problem), tier and source, so a later round never re-runs an edit.
    """

    def one(rw: Rewrite) -> tuple[str, float]:
        SCREENING.set(rw)  # each pool thread runs in a context of its own
        return _light(rw.source, evaluate, namespace, tier)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, rewrites))
    scored = []
    for i, (rw, (verdict, light)) in enumerate(zip(rewrites, results, strict=True)):
        far = screened_distance(rw.source, namespace, tier)
        cost, work = screened_cost(rw.source, namespace, tier)
        scored.append((Screened(rw, verdict, light, edit_size(base, rw.source), far, cost, work), i))
    # At equal shares of correct elements the nearer numbers come first (one of two bugs fixed).
    scored.sort(key=lambda item: (*promise(item[0]), item[1]))
    return [s for s, _ in scored]


def promise(s: Screened) -> tuple[bool, float, float, int, int, int]:
    """Sort key of a screened edit: a pass first, then the highest light score, the nearest numbers, the
    smallest edit, the cheaper kernel (in doublings of its cost, so small differences keep the edit order).

    Between two passes, a kernel four times as costly loses before size counts: `grid = (n,)` is a shorter
    edit than `(triton.cdiv(n, BLOCK),)` and launches a program per element."""
    cost = cost_steps(s)
    return (not s.passed, -s.light, s.distance, cost // 2 if s.passed else 0, s.size, cost)


def cost_steps(s: Screened) -> int:
    """Doublings of an edit's cost: of its interpreted work where known (exact, and large enough to tell
    kernels apart on the smallest case), else of its CPU time above a worker's fixed cost."""
    if s.work > 0:
        return int(math.log2(max(s.work, WORK_UNIT) / WORK_UNIT))
    return int(math.log2(max(s.cost, CPU_UNIT_S) / CPU_UNIT_S))


CPU_UNIT_S = 0.25
"""Screening CPU seconds below this are one bucket (a worker's fixed cost); above, each doubling is a step."""
WORK_UNIT = 1024
"""Interpreted work below this many elements is one bucket; above, each doubling is a step."""


def candidates(
    source: str,
    rule_ids: Sequence[str] | None = None,
    context: RuleContext | None = None,
    mutations: bool = True,
    lines: Sequence[tuple[int, int]] | None = None,
    kernels: Sequence[str] | None = None,
    ranked_lines: Sequence[int] | None = None,
) -> list[Rewrite]:
    """Rule rewrites in the given order (the rest of the rules after), then the general edit space.

    The edit space (edit_space.py, with the mutations) is ordered by `ranked_lines` (localised statements,
    most suspect first) after the `lines` ranges a hypothesis points at; `kernels` alone keeps the old
    behaviour of mutating only inside the named kernels.
    """
    from kernel_medic.tools.repair.rules.registry import RULES

    order = [r for r in (rule_ids or []) if r in RULES]
    order += [r for r in RULES if r not in order]
    found = propose(source, order, context)
    if mutations:
        seen = {rw.source for rw in found}
        if kernels and not lines and not ranked_lines:
            edits = mutate(source, lines=lines, kernels=kernels, context=context)
        else:
            pointed = [x for lo, hi in lines or [] for x in range(lo, hi + 1)]
            edits = generate(source, context, [*pointed, *(ranked_lines or [])], extra=MUTATIONS)
        found += [rw for rw in edits if rw.source not in seen]
    if context is not None and context.crash.get("class") == "output_allocation":
        # An output of the wrong shape or dtype is allocated on the host: no edit inside a kernel can change
        # it, so the host's edits (sizes, dtypes, views) screen first, each list keeping its own order.
        # Where the size is computed or allocated comes first of all.
        spans, sizing = kernel_spans(source), sizing_lines(source)

        def place(rw: Rewrite) -> int:
            return 2 if any(lo <= rw.line <= hi for lo, hi in spans) else int(rw.line not in sizing)

        found.sort(key=place)
    return found
