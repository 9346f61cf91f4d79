"""The offline patcher for a candidate that crashes: crash rules only, ranked by how far each fix gets.

A crash scores 0 whatever its cause, so the score cannot tell a fix that removed the crash (and met the
next one, or a mismatch with every element wrong) from one that changed nothing. Each rewrite of the crash
rules is run on the light tier and ranked by the judge's own report: a pass, then the share of correct
elements, then the stage reached (`crashes.stage`: import < init < wrapper < kernel < output < mismatch),
then the smaller edit. The best is kept when it passes or got further than the base (`crashes.progress`).
Generated kernels are often broken several times over and each fix only exposes the next crash, so the
patcher goes on from the kept rewrite with the crash it now shows, fix after fix while each gets further
(at most `MAX_CHAIN`), and proposes the chain as one patch; the graph's verify node judges it on the full
tier as any other patch, and a crash fixed into a near-miss goes on through the usual near-miss repair.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kernel_medic.tools.evaluation import crashes
from kernel_medic.tools.repair.patchers import PatchOutcome, PatchRequest, Proposal
from kernel_medic.tools.repair.rules.base import Rewrite, RuleContext
from kernel_medic.tools.repair.rules.registry import RULES, propose
from kernel_medic.tools.repair.search import EvaluateFn, edit_size, light_score
from kernel_medic.tools.trace import source_hash

CRASH_CLASSES = frozenset(crashes.CRASH_CLASSES) - {"interpreter_limitation", "other"}
# Fixes chained in one proposal at most (each one got further than the one before on the light case).
MAX_CHAIN = 8
_cache: dict[tuple[str, str], dict[str, Any]] = {}
_lock = threading.Lock()


def crash_rules() -> list[str]:
    """The rules written for crashes (their bug class is a crash class)."""
    return [rule_id for rule_id, rule in RULES.items() if rule.bug_class in CRASH_CLASSES]


class CrashPatcher:
    def __init__(self, evaluate: EvaluateFn, workers: int = 1, namespace: str = "") -> None:
        self.evaluate = evaluate
        self.workers = workers
        self.namespace = namespace

    def propose(self, request: PatchRequest) -> PatchOutcome:
        base = request.report or {}
        crash = base.get("crash") or {}
        if crash.get("class") == "interpreter_limitation":
            return PatchOutcome(None, exhausted=True, error="a CPU-interpreter limitation is not repaired")
        order = [r for r in request.rule_ids if r in crash_rules()]
        order += [r for r in crash_rules() if r not in order]
        ranked = self._ranked(request.source, base, order, request, set(request.seen_hashes))
        if not ranked:
            return PatchOutcome(None, exhausted=True, error="no crash rule applies")
        ranked = self._past_hang(ranked, base, order, request, set(request.seen_hashes))
        best, report = ranked[0]
        if not _further(base, report):
            # Nothing got further on the light case: an edit of the diagnosed class, at the failing line
            # first, still gets its try on the full tier (verify), within the hypothesis' patch budget.
            diagnosed = [rw for rw, _ in ranked if RULES[rw.rule].bug_class == crash.get("class")]
            return PatchOutcome(_proposal(diagnosed[0] if diagnosed else best))
        # Generated kernels are often broken several times over, and each fix only shows the next crash:
        # go on fixing from the best rewrite while each next fix gets further still, and propose the chain
        # (verify judges the whole of it on the full tier, as any other patch).
        chain = [best]
        seen = {*request.seen_hashes, source_hash(best.source)}
        while report.get("verdict") in crashes.CRASH_VERDICTS and len(chain) < MAX_CHAIN:
            context = RuleContext.from_reference(request.reference_source, report)
            step = self._ranked(chain[-1].source, report, order, request, seen, context)
            step = self._past_hang(step, report, order, request, seen, context)
            if not step or not _further(report, step[0][1]):
                break
            chain.append(step[0][0])
            seen.add(source_hash(step[0][0].source))
            report = step[0][1]
        return PatchOutcome(_proposal(chain[0], chain))

    def _ranked(
        self,
        source: str,
        base: dict[str, Any],
        order: list[str],
        request: PatchRequest,
        seen: set[str],
        context: RuleContext | None = None,
    ) -> list[tuple[Rewrite, dict[str, Any]]]:
        """The crash rules' rewrites of `source`, each run on the light tier, best first."""
        crash = base.get("crash") or {}
        context = context or RuleContext.from_reference(request.reference_source, base)
        rewrites = [
            rw
            for rw in propose(source, order, context)
            if source_hash(rw.source) not in seen
            and request.patch_counts.get(RULES[rw.rule].bug_class, 0) < request.patch_cap
        ]
        if not rewrites:
            return []
        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            reports = list(pool.map(self._light, rewrites))
        return sorted(
            zip(rewrites, reports, strict=True),
            key=lambda item: (
                item[1].get("verdict") != "pass",
                -light_score(item[1]),
                not crashes.progress(base, item[1]),
                -crashes.stage(item[1]),
                item[0].line != crash.get("line"),  # an edit of the failing line first
                edit_size(source, item[0].source),
            ),
        )

    def _past_hang(
        self,
        ranked: list[tuple[Rewrite, dict[str, Any]]],
        base: dict[str, Any],
        order: list[str],
        request: PatchRequest,
        seen: set[str],
        context: RuleContext | None = None,
    ) -> list[tuple[Rewrite, dict[str, Any]]]:
        """When nothing got further but a fix turned the crash into a hang, the hang may be the next bug the
        crash hid (the assert removed, the launch `k[grid, BLOCK]` now runs grid x BLOCK programs): the crash
        rules get one more go on top of that fix, under the crash it removed, and a pair that gets further
        ranks first."""
        if not ranked or _further(base, ranked[0][1]):
            return ranked
        hung = next((rw for rw, rep in ranked if rep.get("verdict") == "timeout"), None)
        if hung is None:
            return ranked
        on_top = self._ranked(hung.source, base, order, request, seen | {source_hash(hung.source)}, context)
        if not on_top or not _further(base, on_top[0][1]):
            return ranked
        second, report = on_top[0]
        pair = Rewrite(hung.rule, f"{hung.description}; then {second.description}", second.source, hung.line)
        return [(pair, report), *ranked]

    def _light(self, rewrite: Rewrite) -> dict[str, Any]:
        key = (self.namespace, source_hash(rewrite.source))
        with _lock:
            if key in _cache:
                return _cache[key]
        try:
            report = self.evaluate(rewrite.source, "light")
        except Exception as exc:  # a candidate that breaks the evaluator ranks last; the search goes on
            report = {"verdict": f"error: {type(exc).__name__}", "score": 0.0}
        with _lock:
            if len(_cache) > 512:
                _cache.pop(next(iter(_cache)))
            _cache[key] = report
        return report


def _further(base: dict[str, Any], report: dict[str, Any]) -> bool:
    return report.get("verdict") == "pass" or light_score(report) > 0 or crashes.progress(base, report)


def _proposal(rewrite: Rewrite, chain: list[Rewrite] | None = None) -> Proposal:
    """The last rewrite's source; named after the first (the fix of the diagnosed crash), all described."""
    chain = chain or [rewrite]
    bug_class = RULES[rewrite.rule].bug_class
    description = "; then ".join(rw.description for rw in chain)
    return Proposal(chain[-1].source, "offline", bug_class, rewrite.rule, description)
