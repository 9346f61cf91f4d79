"""Patch strategies behind one interface: offline rewrite rules, an LLM, or both (offline first).

A patcher proposes ONE small edit of the best version so far; it never decides success (the evaluator and
the integrity gate do). Proposals that reproduce a source already tried are never returned as new.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kernel_medic.tools.evaluation.evaluate import SEVERITY
from kernel_medic.tools.repair.edit_space import EDITS, generate, statement_spans
from kernel_medic.tools.repair.llm import LLMReply
from kernel_medic.tools.repair.mutations import MUTATIONS
from kernel_medic.tools.repair.rules.base import Rewrite, RuleContext
from kernel_medic.tools.repair.rules.registry import RULES
from kernel_medic.tools.repair.search import (
    EvaluateFn,
    Screened,
    candidates,
    comes_closer,
    edit_size,
    fixes_cases,
    known_full,
    known_screen,
    light_score,
    promise,
    screen,
    screened_cost,
    screened_distance,
    screening_tier,
    verify_full,
    wasteful,
)
from kernel_medic.tools.trace import source_hash

SCREEN_BATCH = 8
"""Candidate edits screened at once on the light tier (a RepairConfig field would be the place for it)."""
SCREEN_LIMIT = 48
"""Most candidate edits screened for one proposal (cached: a later proposal on the same base is cheap)."""
MICRO_FACTOR = 8
"""On the micro tier an edit costs a fraction of a light run: this many times more edits fit one proposal."""
PAIR_FIRSTS = 8
"""Single edits at the most suspect statement that a second edit is tried on top of (a third as many at
each of the next ones): each costs one generation of the edit space."""
PROPOSAL_BUDGET_S = 45.0
"""Seconds of screening one proposal may start (then it proposes from what it has; cached for the next)."""
PAIR_STATEMENTS = 3
"""The most suspect statements whose single edits start a pair."""
PAIR_SCREENS = 64
"""Most two-edit candidates screened for one proposal (only when no single edit gains)."""
FULL_CHECKS = 6
"""Most screened edits run on the full tier for one proposal before the most promising is proposed."""
FEW_ELEMENTS = 4
"""Outputs of at most this many numbers per case rank edits by the full tier's cases, not the screening's."""
FEW_ELEMENT_CHECKS = 3
"""For such outputs this many times FULL_CHECKS finalists run on the full tier before a partial gain is
taken."""
SLIVER = 0.05
"""A full-tier gain closing less of the gap to 1.0 than this share does not end the checks early: a wrong edit
that happens to fix a few elements must not be kept before the other promising edits have run."""


@dataclass
class PatchRequest:
    problem_name: str
    reference_source: str
    source: str  # the best version so far: every patch applies to it
    report: dict[str, Any]  # its full-tier evaluation report
    hypotheses: list[dict[str, Any]]  # ranked, from diagnosis
    patterns: list[dict[str, Any]]  # retrieved knowledge-base patterns: id, title, bug_class, fix
    rule_ids: list[str]  # offline rules in the order retrieval and diagnosis suggest
    instrumentation: list[dict[str, Any]]
    failed_attempts: list[dict[str, Any]]
    feedback: str
    seen_hashes: set[str]
    patch_counts: dict[str, int]  # patches already tried per hypothesis
    patch_cap: int
    # (first, last) lines of the region questions this run already asked about this source: not asked first
    asked_regions: set[tuple[int, int]] = field(default_factory=set)


@dataclass
class Proposal:
    source: str
    strategy: str
    hypothesis: str
    rule: str
    description: str


@dataclass
class PatchOutcome:
    proposal: Proposal | None
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    exhausted: bool = False  # nothing left to propose
    oscillation: bool = False  # the proposal reproduced a source tried before
    error: str | None = None
    feedback: str = ""


class ChatModel(Protocol):
    def complete(
        self, messages: list[dict[str, str]], temperature: float | None = None, max_tokens: int | None = None
    ) -> LLMReply: ...


class Patcher(Protocol):
    def propose(self, request: PatchRequest) -> PatchOutcome: ...


def _no_worse(verdict: str, base: str) -> bool:
    """Whether a screening verdict is no more severe than the base's (an evaluator error is the worst)."""
    order = {v: i for i, v in enumerate(SEVERITY)}
    return order.get(verdict, -1) >= order.get(base, len(SEVERITY))


class OfflinePatcher:
    """Rewrite rules in the order retrieval ranked them, then mutations where the diagnosis points.

    Without an evaluator it proposes the first untried rewrite of an open hypothesis. With one, it screens the
    untried rewrites on the light tier in parallel, runs the most promising that do not lose on the light
    case through the full tier (a few per call, cached) and proposes the first that beats the base there;
    failing that, the next unchecked one. The graph loop applies the patch to the best version so far.
    """

    def __init__(
        self,
        evaluate: EvaluateFn | None = None,
        workers: int = 1,
        mutations: bool = True,
        batch: int = SCREEN_BATCH,
        max_screened: int = SCREEN_LIMIT,
        namespace: str = "",
        full_checks: int = FULL_CHECKS,
        localise: Callable[[str, dict[str, Any]], list[int]] | None = None,
        pair_screens: int = PAIR_SCREENS,
        time_budget_s: float = PROPOSAL_BUDGET_S,
        admissible: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.evaluate = evaluate
        self.workers = workers
        self.mutations = mutations
        self.batch = batch
        self.max_screened = max_screened
        self.namespace = namespace
        self.full_checks = full_checks
        self.localise = localise  # (source, report) -> suspect statement lines, most suspect first
        self.pair_screens = pair_screens
        self.time_budget_s = time_budget_s
        # (edited source, base) -> False for an edit the integrity gate would refuse however it scores: a step
        # the final patch could never keep is not a step to build on.
        self.admissible = admissible

    def propose(self, request: PatchRequest) -> PatchOutcome:
        untried = self._untried(request)
        if not untried:
            return PatchOutcome(None, exhausted=True, error="no untried rewrite rule applies")
        if self.evaluate is None:
            return PatchOutcome(_proposal(untried[0]))
        base_full = float(request.report.get("score", -1.0)) if request.report else -1.0
        tier, base_light = screening_tier(request.source, self.evaluate, self.namespace, request.report)
        if tier == "light":
            base_light = light_score(request.report) if request.report else base_light
        if base_light >= 1.0:
            # The screening case passes already (only a layout or another shape fails), so it cannot rank
            # edits: the full tier decides, and the rules and mutations are all the budget affords.
            untried = [rw for rw in untried if rw.rule not in EDITS] or untried
        # Edits already run on the full tier without beating this base are settled: screen the others.
        fresh = [rw for rw in untried if not _settled(rw, base_full, self.namespace)] or untried
        # Edits screened before keep their result; the budget goes to edits not screened yet, so successive
        # proposals walk further down the ranked edit space instead of re-ranking the same first batch.
        screened: list[Screened] = []
        unscreened: list[Rewrite] = []
        for rw in fresh:
            known = known_screen(rw.source, self.namespace, tier)
            if known is None:
                unscreened.append(rw)
            elif known[1] >= base_light:
                far = screened_distance(rw.source, self.namespace, tier)
                cost, work = screened_cost(rw.source, self.namespace, tier)
                size = edit_size(request.source, rw.source)
                screened.append(Screened(rw, known[0], known[1], size, far, cost, work))
        limit = self.max_screened * (MICRO_FACTOR if tier == "micro" else 1)
        early = self.full_checks
        started = time.monotonic()
        for start in range(0, min(len(unscreened), limit), self.batch):
            if start and time.monotonic() - started > self.time_budget_s:
                break  # the rest waits for the next proposal (results so far are cached)
            batch = unscreened[start : min(start + self.batch, limit)]
            fresh_screened = screen(request.source, batch, self.evaluate, self.workers, self.namespace, tier)
            screened += fresh_screened
            # An edit that passes the screening case is checked at once: a full pass ends the proposal
            # without screening the rest (most repairs are found in the first batches, rules first).
            in_time = time.monotonic() - started < self.time_budget_s
            passing = [x for x in fresh_screened if x.passed][: max(0, early) if in_time else 0]
            early -= len(passing)
            # One round per pool width, best (and so cheapest of equals) first: a grid of one program per
            # element passes the screening case too, and its full tier takes a minute nobody needs to wait
            # for once a cheaper edit has passed.
            width = max(1, self.workers)
            for at in range(0, len(passing), width):
                verified = verify_full(
                    [x.rewrite for x in passing[at : at + width]], self.evaluate, self.workers, self.namespace
                )
                # The gate would refuse a wasteful edit (dead_lanes): a cheaper edit may still pass.
                kept = [
                    (item, verdict)
                    for item, verdict, _ in verified
                    if not wasteful(item.source, request.report or {}, self.namespace)
                    and (verdict == "pass" or fixes_cases(item.source, request.report, self.namespace))
                ]
                # A whole pass of the round beats an edit that only fixes some cases: both pass the screening
                # case, and the partial one, kept, may block the other (a sum masked where its accumulator was
                # the place).
                kept.sort(key=lambda pair: pair[1] != "pass")
                if kept:
                    return PatchOutcome(_proposal(kept[0][0]))
        screened.sort(key=promise)
        # An edit that breaks what the base runs (a compile error where it computed wrong numbers) cannot
        # beat it on the full tier: on a screening case the base gets all wrong, it still ties on the score.
        base_verdict = (known_screen(request.source, self.namespace, tier) or ("mismatch", 0.0))[0]
        screened = [s for s in screened if _no_worse(s.verdict, base_verdict)]
        # The light case cannot tell edits apart when it already passes (or ties): the full tier decides.
        viable = [s for s in screened if s.light >= base_light and s.light >= 0]
        # An output of a few numbers (a loss) gives the screening one number to rank by: an edit that tunes it
        # by accident (a size swapped so a swap branch never wins) comes nearer than the fix. The full tier's
        # cases are then the only evidence, so more finalists run there and a partial gain waits for them.
        few = _few_elements(request.report)
        checks = viable[: self.full_checks * (FEW_ELEMENT_CHECKS if few else 1)]
        step = max(1, self.workers)
        gains: list[tuple[Screened, str, float]] = []
        namespace = self.namespace
        for start in range(0, len(checks), step):
            if start and time.monotonic() - started > 2 * self.time_budget_s:
                break  # the unchecked ones stay for the next proposal
            # One round per pool width; a pass or a real gain ends the search (the graph loop keeps it).
            chunk = checks[start : start + step]
            results = verify_full([s.rewrite for s in chunk], self.evaluate, self.workers, self.namespace)
            gains += [
                (screened, verdict, score)
                for screened, (_, verdict, score) in zip(chunk, results, strict=True)
                if not wasteful(screened.rewrite.source, request.report or {}, namespace)
                and (
                    verdict == "pass"
                    or score > base_full
                    or comes_closer(screened.rewrite.source, request.report, namespace)
                )
            ]
            # Real gains first; an edit only nearer the reference (comes_closer) ranks after them.
            gains.sort(key=lambda item: (item[1] != "pass", -max(item[2], base_full), item[0].size))
            if gains and (
                gains[0][1] == "pass"
                or (
                    not few
                    and (
                        gains[0][2] - base_full >= SLIVER * (1.0 - base_full)
                        or fixes_cases(gains[0][0].rewrite.source, request.report, self.namespace)
                    )
                )
            ):
                return PatchOutcome(_proposal(gains[0][0].rewrite))
        if few and gains and gains[0][2] > base_full:
            return PatchOutcome(_proposal(gains[0][0].rewrite))  # the best of all finalists checked
        # No single edit passes or closes a real share of the gap: two edits on the most suspect statement
        # may (a statement with two mistakes); a sliver stays the fallback.
        # Pairs need a screening case that shows the bug (a base that passes it cannot rank them) and time.
        in_time = time.monotonic() - started < 1.5 * self.time_budget_s
        pair = (
            self._pairs(request, screened, tier, base_light, base_full)
            if base_light < 1 and in_time
            else None
        )
        if pair is not None and (not gains or pair[1] == "pass" or pair[2] > gains[0][2]):
            return PatchOutcome(_proposal(pair[0]))
        if gains:  # only slivers: the largest is still progress
            return PatchOutcome(_proposal(gains[0][0].rewrite))
        # Nothing checked beats the base: propose the next unchecked edit, so the verify node tries one more.
        rest = viable[len(checks) :] or screened
        if not rest:
            return PatchOutcome(None, exhausted=True, error="every untried edit loses on the screening case")
        return PatchOutcome(_proposal(rest[0].rewrite))

    def _pairs(
        self, request: PatchRequest, screened: list[Screened], tier: str, base_light: float, base_full: float
    ) -> tuple[Rewrite, str, float] | None:
        """Two edits on the most suspect statement, when no single edit gains (a statement with two mistakes,
        e.g. a term too many and a divisor off by one, scores no better after either fix alone).

        The first edits are the best-screening edits of the edit space at that statement that do not lose;
        the second come from the edit space of each result, at the same statement.
        """
        if self.localise is None or self.pair_screens <= 0:
            return None
        ranked = self.localise(request.source, request.report)
        if not ranked:
            return None
        all_spans = statement_spans(request.source)
        firsts: list[tuple[Screened, int, int]] = []
        for i, line in enumerate(ranked[:PAIR_STATEMENTS]):
            spans = [span for span in all_spans if span[0] <= line <= span[1]]
            lo, hi = spans[0] if spans else (line, line)
            here = [
                s
                for s in screened
                if lo <= s.rewrite.line <= hi
                and (s.rewrite.rule in EDITS or s.rewrite.rule in MUTATIONS)
                and s.light >= base_light
                and s.verdict in ("pass", "mismatch")  # an edit that breaks the kernel starts no pair
            ]
            # One first edit per kind before a second of any kind: ties on the screen say nothing, so spread.
            spread = _spread(here, lambda s: s.rewrite.rule)
            firsts += [(s, lo, hi) for s in spread[: PAIR_FIRSTS if i == 0 else PAIR_FIRSTS // 4]]
        context = RuleContext.from_reference(request.reference_source, request.report)
        seen = set(request.seen_hashes)
        per_first: list[list[Rewrite]] = []
        for first, lo, hi in firsts:
            pairs: list[Rewrite] = []
            per_first.append(pairs)
            # Seconds: any edit at the same statement, or the same kind of edit at another suspect one (a row
            # offset forgotten by both the load and the store).
            for second in generate(first.rewrite.source, context, [lo], extra=MUTATIONS):
                digest = source_hash(second.source)
                here = lo <= second.line <= hi + 2
                if digest in seen or not (
                    here or (second.rule == first.rewrite.rule and second.line in ranked[:8])
                ):
                    continue
                if self.admissible is not None and not self.admissible(second.source, request.source):
                    continue
                seen.add(digest)
                what = f"{first.rewrite.description}; then {second.description}"
                pairs.append(Rewrite(second.rule, what, second.source, first.rewrite.line))
        # Round-robin over the firsts, and within each over the kinds of second edit: every combination of
        # kinds gets its first candidates screened before any gets its tenth.
        per_first = [_spread(group, lambda rw: rw.rule) for group in per_first]
        pairs = [p for group in itertools.zip_longest(*per_first) for p in group if p is not None]
        pairs = pairs[: self.pair_screens]
        results = screen(request.source, pairs, self.evaluate, self.workers, self.namespace, tier)
        promising = [r for r in results if r.passed or r.light > base_light][: self.full_checks]
        verified = verify_full([r.rewrite for r in promising], self.evaluate, self.workers, self.namespace)
        verified.sort(key=lambda item: (item[1] != "pass", -item[2]))
        if verified and (verified[0][1] == "pass" or verified[0][2] > base_full):
            return verified[0]
        return None

    def _untried(self, request: PatchRequest) -> list[Rewrite]:
        location = request.hypotheses[0] if request.hypotheses else {}
        lines = location.get("lines")
        kernel = location.get("kernel")
        found = candidates(
            request.source,
            request.rule_ids,
            RuleContext.from_reference(request.reference_source, request.report),
            mutations=self.mutations,
            lines=[tuple(lines)] if lines else None,
            kernels=[kernel] if kernel else None,
            ranked_lines=self.localise(request.source, request.report) if self.localise else None,
        )
        return [
            rw
            for rw in found
            if request.patch_counts.get(_hypothesis(rw), 0) < request.patch_cap
            and source_hash(rw.source) not in request.seen_hashes
            and (self.admissible is None or self.admissible(rw.source, request.source))
        ]


def _few_elements(report: dict[str, Any] | None) -> bool:
    """Whether every counted case of a full-tier report has an output of a few numbers (a loss, a norm)."""
    cases = [c for c in (report or {}).get("cases") or [] if c.get("counted", True)]
    return bool(cases) and all(0 < int(c.get("numel") or 0) <= FEW_ELEMENTS for c in cases)


def _spread(items: list[Any], kind: Callable[[Any], str]) -> list[Any]:
    """`items` reordered round-robin over their kinds, each kind keeping its own order."""
    groups: dict[str, list[Any]] = {}
    for item in items:
        groups.setdefault(kind(item), []).append(item)
    return [x for row in itertools.zip_longest(*groups.values()) for x in row if x is not None]


def _settled(rewrite: Rewrite, base_full: float, namespace: str) -> bool:
    known = known_full(rewrite.source, namespace)
    return known is not None and known[0] != "pass" and known[1] <= base_full


def _hypothesis(rewrite: Rewrite) -> str:
    rule = RULES.get(rewrite.rule) or MUTATIONS.get(rewrite.rule) or EDITS.get(rewrite.rule)
    return rule.bug_class if rule is not None else "unknown"


def _proposal(rewrite: Rewrite) -> Proposal:
    return Proposal(rewrite.source, "offline", _hypothesis(rewrite), rewrite.rule, rewrite.description)


class HybridPatcher:
    """Offline rules first; the LLM once the rules are spent or the search stagnates."""

    def __init__(self, offline: OfflinePatcher, llm: Callable[[], Patcher], stagnation: int) -> None:
        self.offline = offline
        self.llm = llm
        self.stagnation = stagnation

    def propose(self, request: PatchRequest, no_progress: int = 0) -> PatchOutcome:
        if no_progress < self.stagnation:
            outcome = self.offline.propose(request)
            if outcome.proposal is not None:
                return outcome
        return self.llm().propose(request)
