"""The offline patcher for a candidate that crashes: crash rules only, ranked by how far each fix gets.

A crash scores 0 whatever its cause, so the score cannot tell a fix that removed the crash (and met the
next one, or a mismatch with every element wrong) from one that changed nothing. Each rewrite of the crash
rules is run on the light tier and ranked by the judge's own report: a pass, then the share of correct
elements, then the stage reached (`crashes.stage`: import < init < wrapper < kernel < output < mismatch),
then the smaller edit. The best is proposed when it passes or got further than the base (`crashes.progress`);
the graph's verify node judges it on the full tier as any other patch, and a crash fixed into a near-miss
goes on through the usual near-miss repair.
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
        context = RuleContext.from_reference(request.reference_source, base)
        rewrites = [
            rw
            for rw in propose(request.source, order, context)
            if source_hash(rw.source) not in request.seen_hashes
            and request.patch_counts.get(RULES[rw.rule].bug_class, 0) < request.patch_cap
        ]
        if not rewrites:
            return PatchOutcome(None, exhausted=True, error="no crash rule applies")
        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            reports = list(pool.map(self._light, rewrites))
        ranked = sorted(
            zip(rewrites, reports, strict=True),
            key=lambda item: (
                item[1].get("verdict") != "pass",
                -light_score(item[1]),
                not crashes.progress(base, item[1]),
                -crashes.stage(item[1]),
                item[0].line != crash.get("line"),  # an edit of the failing line first
                edit_size(request.source, item[0].source),
            ),
        )
        best, report = ranked[0]
        if report.get("verdict") == "pass" or light_score(report) > 0 or crashes.progress(base, report):
            return PatchOutcome(_proposal(best))
        # Nothing got further on the light case: an edit of the diagnosed class, at the failing line first,
        # still gets its try on the full tier (verify), within the hypothesis' patch budget.
        diagnosed = [rw for rw, _ in ranked if RULES[rw.rule].bug_class == crash.get("class")]
        return PatchOutcome(_proposal(diagnosed[0] if diagnosed else best))

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


def _proposal(rewrite: Rewrite) -> Proposal:
    bug_class = RULES[rewrite.rule].bug_class
    return Proposal(rewrite.source, "offline", bug_class, rewrite.rule, rewrite.description)
