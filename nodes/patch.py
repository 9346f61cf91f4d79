"""patch: one small edit of the best version so far, from the configured strategy."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

from kernel_medic.graph.runtime import (
    INVOCATION,
    chat_model_for,
    config_of,
    evaluator_for,
    problem_for,
    traced,
)
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis.localise import Suspects, localise, rank_statements
from kernel_medic.tools.evaluation.cases import cases_for_tier
from kernel_medic.tools.integrity.static_checks import (
    introduces_constant_trip_count,
    introduces_foreign_trip_count,
)
from kernel_medic.tools.repair.crash_patcher import CrashPatcher
from kernel_medic.tools.repair.host_checks import after_refusal
from kernel_medic.tools.repair.llm_patch import LLMBudget, LLMOptions, LLMOutcome, LLMPatcher
from kernel_medic.tools.repair.patchers import (
    PROPOSAL_BUDGET_S,
    HybridPatcher,
    OfflinePatcher,
    PatchOutcome,
    PatchRequest,
    Proposal,
)
from kernel_medic.tools.repair.search import SCREENING, full_report, screening_tier
from kernel_medic.tools.trace import append_event, source_hash


@traced("patch")
def patch(state: RepairState) -> dict[str, Any]:
    config = config_of(state)
    trace_path = state.get("trace_path")
    retry = _without_refused_checks(state)
    if retry is not None:
        return _delta(PatchOutcome(retry), state)

    def llm() -> LLMPatcher:
        model = chat_model_for(config, trace_path)
        offline = _offline(state, mutations=False)  # its evaluator screens several LLM samples
        return LLMPatcher(
            model,
            LLMOptions(
                rounds=config.edit_retries + 1,
                samples=config.llm_samples,
                retry_temperature=config.llm_retry_temperature,
                prompt_tokens=config.llm_prompt_tokens,
                reply_tokens=config.llm_max_output_tokens,
                max_fraction=config.regeneration_fraction,
                min_pattern_score=config.llm_pattern_min_score,
                region_first=config.llm_region_first,
                parallel_samples=config.llm_parallel_samples,
                regions=config.llm_regions,
            ),
            # Caps are never overshot: the patcher asks at most what is left of each budget.
            LLMBudget(
                calls_left=config.max_llm_calls - state.get("llm_calls", 0),
                no_edit_left=config.llm_no_edit_limit - state.get("llm_no_edit", 0),
                wall_left_s=config.wall_budget_s - state.get("wall_s", 0.0),
                no_edit_used=state.get("llm_no_edit", 0),
            ),
            lambda kind, data: append_event(trace_path, kind, **data),
            evaluate=offline.evaluate,
            workers=offline.workers,
            namespace=offline.namespace,
            localise=_localiser(state) if config.localise else lambda s, r: rank_statements(s, r).suspects,
        )

    request = PatchRequest(
        problem_name=state.get("problem_name", ""),
        reference_source=state.get("reference_source", ""),
        source=state["best_source"],
        report=state.get("best_report") or {},
        hypotheses=state.get("diagnosis") or [],
        patterns=state.get("patterns") or [],
        rule_ids=state.get("rule_ids") or [],
        instrumentation=state.get("instrumentation") or [],
        failed_attempts=[a for a in state.get("attempts") or [] if not a.get("improved")],
        feedback=state.get("feedback", ""),
        seen_hashes=set(state.get("seen_hashes") or []),
        patch_counts=state.get("patches_per_hypothesis") or {},
        patch_cap=config.patches_per_hypothesis,
        asked_regions={
            (a["region"][0], a["region"][1])
            for a in state.get("llm_answers") or []
            if a.get("region") and a.get("of") == source_hash(state["best_source"])
        },
    )
    stagnating = state.get("no_progress", 0) >= max(1, config.no_progress_limit // 2)
    if request.report.get("crash") and (
        config.strategy == "offline" or (config.strategy == "hybrid" and not stagnating)
    ):
        # A crash: the crash rules first, ranked by how far each fix gets; in hybrid runs the LLM when none
        # applies or they stop making progress (as for a near-miss).
        offline = _offline(state, mutations=False)
        outcome = CrashPatcher(offline.evaluate, offline.workers, offline.namespace).propose(request)
        # A wrong output shape or dtype is also what near-miss rules fix (an output size formula, a missing
        # cast), so offline runs go on to them when no crash rule applies; other crashes have no output.
        wrong_output = request.report["crash"].get("verdict") in ("shape_mismatch", "dtype_mismatch")
        if outcome.proposal is not None or (config.strategy == "offline" and not wrong_output):
            return _delta(outcome, state)
    if config.strategy == "offline":
        outcome = _offline(state, mutations=True).propose(request)
    elif config.strategy == "llm":
        outcome = llm().propose(request)
    else:
        stagnation = max(1, config.no_progress_limit // 2)
        # In hybrid runs the LLM is the fallback for what no rule names, so no blind mutations here.
        outcome = HybridPatcher(_offline(state, mutations=False), llm, stagnation).propose(
            request, state.get("no_progress", 0)
        )
    return _delta(outcome, state)


def _without_refused_checks(state: RepairState) -> Proposal | None:
    """The passing version the gate just refused for host compute, without the wrapper's input checks that
    computed (tried once: the gate judges it like any other passing version)."""
    refused = state.get("refused_source")
    integrity = state.get("integrity") or {}
    if not refused or integrity.get("verdict") in (None, "clean"):
        return None
    found = after_refusal(refused, integrity.get("findings") or [])
    if found is None or source_hash(found[0]) in set(state.get("seen_hashes") or []):
        return None
    source, lines = found
    where = ", ".join(str(n) for n in lines)
    description = f"drop the host-side input checks the gate counted as host compute (line {where})"
    return Proposal(source, "offline", "host_compute", "drop_host_checks", description)


def _offline(state: RepairState, mutations: bool) -> OfflinePatcher:
    """An offline patcher that screens its candidates on the run's evaluator (light tier, in parallel)."""
    config = config_of(state)
    evaluator = evaluator_for(config)
    problem = problem_for(state)
    trace_path = state.get("trace_path")
    # One proposal never runs far past the run's wall budget: its full-tier checks may take as long again as
    # its screening, so the screening gets half of what is left.
    created = time.monotonic()
    run_left_s = config.wall_budget_s - state.get("wall_s", 0.0)
    budget_s = max(5.0, min(PROPOSAL_BUDGET_S, run_left_s / 2))
    window: list[float] = []

    def screening_window() -> tuple[float, float]:
        """(this proposal's deadline, when no screening starts any more), fixed at its first screening. An
        LLM proposal screens its answers after the model wrote them: timed from this patcher's creation, a
        local model's 90-s round left every answer "timed out" unscreened (round 42: 21 of 46 steps), and
        the best of several answers was then the first."""
        if not window:
            now = time.monotonic()
            left = run_left_s - (now - created)
            deadline = now + 2 * max(5.0, min(PROPOSAL_BUDGET_S, left / 2))
            # Past both this proposal's deadline and the run's wall budget no screening starts: its result
            # could only be cut short (finalists' full-tier runs went on 40 s past a spent budget).
            window.extend([deadline, max(deadline, now + left)])
        return window[0], window[1]

    walls: dict[str, list[float]] = {}

    def evaluate(source: str, tier: str) -> dict[str, Any]:
        # An edit can make a kernel loop for ever (a loop step of 0, a bound of n * n) or launch a program
        # per element: screening it must not cost the problem's whole timeout. Once a few screenings have
        # run, one gets a few times their median; and no evaluation runs past the proposal's deadline (the
        # full tier included: a grid of n programs passes the screening case and then takes a minute).
        deadline, spent = screening_window()
        if time.monotonic() >= spent:
            digest = source_hash(source)
            append_event(trace_path, "screen", tier=tier, verdict="timeout", digest=digest, skipped=True)
            return {"verdict": "timeout", "score": 0.0, "cases": [], "cut_short": True}
        seen = walls.setdefault(tier, [])
        limit = problem.config.timeout_s
        if tier != "full" and len(seen) >= SCREEN_SAMPLES:
            limit = min(limit, max(SCREEN_TIMEOUT_FLOOR_S, 5 * statistics.median(seen)))
        left = max(SCREEN_TIMEOUT_FLOOR_S, deadline - time.monotonic())
        cut = left < limit
        limit = min(limit, left)
        target = problem
        if limit < problem.config.timeout_s:
            target = dataclasses.replace(problem, config=dataclasses.replace(problem.config, timeout_s=limit))
        start = time.monotonic()
        candidate = target.with_candidate(source)
        report = evaluator.evaluate(candidate, tier=tier, deadline=deadline).to_dict()  # type: ignore[arg-type]
        wall = time.monotonic() - start
        if report.get("verdict") != "timeout" and len(seen) < 64:
            seen.append(wall)
        elif report.get("verdict") == "timeout" and (cut or time.monotonic() > deadline):
            report["cut_short"] = True  # the deadline, not the edit, ended it: not a result to keep
        append_event(
            trace_path,
            "screen",
            tier=tier,
            verdict=report.get("verdict"),
            score=report.get("score"),
            digest=source_hash(source),
            wall_s=round(wall, 3),
            timeout_s=round(limit, 1),
            **_label(source),
        )
        return report

    return OfflinePatcher(
        evaluate,
        workers=evaluator.pool.size,
        mutations=mutations,
        namespace=_namespace(state),
        localise=_localiser(state) if mutations and config.localise else None,
        time_budget_s=budget_s,
        # The gate refuses a loop count fitted to the tested sizes (a constant, another dimension's size); the
        # search does not take that step either.
        admissible=lambda new, base: not (
            introduces_constant_trip_count(new, base) or introduces_foreign_trip_count(new, base)
        ),
    )


def _namespace(state: RepairState) -> str:
    """Per run: what another run (or a replay's original) learned in this process must not change this
    run's decisions, or replays would diverge."""
    config = config_of(state)
    reference = source_hash(state.get("reference_source", ""))
    namespace = f"{state.get('trace_path')}:{config.device}:{state.get('reference_path')}:{reference}"
    return namespace + f":{INVOCATION.get()}"


def _localiser(state: RepairState) -> Callable[[str, dict[str, Any]], list[int]]:
    """Suspect statements of a source, recorded once per source (the edit space and the LLM's region
    question are ordered by them)."""
    config = config_of(state)
    evaluator = evaluator_for(config)
    problem = problem_for(state)
    namespace = _namespace(state)

    def localiser(source: str, report: dict[str, Any]) -> list[int]:
        key = (namespace, source_hash(source))
        if key not in _LOCALISED:
            try:
                # Recorded on the case the search screens on, one that shows the bug: values recorded
                # where the kernel passes agree everywhere and point nowhere.
                tier, _ = screening_tier(source, _offline(state, mutations=False).evaluate, namespace, report)
                case = cases_for_tier(tier, problem.config, problem.size_constants)[0]
                found = localise(
                    problem.with_candidate(source), evaluator.pool, source, report, config.device, case
                )
            except Exception as exc:  # localisation only orders the search: without it the order is static
                found = rank_statements(source, report)
                found.notes.append(f"recording failed: {type(exc).__name__}")
            append_event(state.get("trace_path"), "localise", **found.to_dict())
            if len(_LOCALISED) > 256:
                _LOCALISED.pop(next(iter(_LOCALISED)))
            _LOCALISED[key] = found.suspects
        return _LOCALISED[key]

    return localiser


def _label(source: str) -> dict[str, Any]:
    """The rule and line of the edit a screening runs, when the search is screening one."""
    rw = SCREENING.get()
    return {"rule": rw.rule, "line": rw.line} if rw is not None and rw.source == source else {}


_LOCALISED: dict[tuple[str, str], Suspects] = {}
SCREEN_SAMPLES = 3
"""Screenings timed before the screening timeout applies."""
SCREEN_TIMEOUT_FLOOR_S = 5.0
"""The shortest screening timeout (a loaded machine's slow screening is not a hang)."""


def _delta(outcome: PatchOutcome, state: RepairState) -> dict[str, Any]:
    delta: dict[str, Any] = {
        "llm_calls": outcome.llm_calls,
        "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens,
        "feedback": outcome.feedback,
        "oscillation": outcome.oscillation,
        "exhausted": outcome.exhausted and outcome.proposal is None,
        "pending": None,
    }
    if outcome.error:
        delta["error"] = outcome.error
    if isinstance(outcome, LLMOutcome):
        delta.update(llm_answers=outcome.answers, llm_wall_s=outcome.llm_wall_s)
        if outcome.no_edit:
            # An answer with no applicable edit is a no-progress step, and K in a row end the run.
            delta["no_progress"] = state.get("no_progress", 0) + outcome.no_edit
            delta["llm_no_edit"] = state.get("llm_no_edit", 0) + outcome.no_edit
        if outcome.proposal is not None:
            delta["llm_no_edit"] = 0
        limit = config_of(state).llm_no_edit_limit
        if outcome.no_edit and state.get("llm_no_edit", 0) + outcome.no_edit >= limit:
            delta["error"] = (
                f"{limit} LLM rounds in a row without an applicable edit (llm_no_edit_limit); "
                f"last: {outcome.error or ''}"
            )
    proposal = outcome.proposal
    if proposal is not None:
        # The search's full-tier run of this very source (same evaluator, seeds and cases) is its
        # verification: verify does not run it again.
        known = full_report(proposal.source, _namespace(state))
        delta.update(
            pending={
                "source": proposal.source,
                "strategy": proposal.strategy,
                "hypothesis": proposal.hypothesis,
                "rule": proposal.rule,
                "description": proposal.description,
                **({"full_report": known} if known else {}),
            },
            iterations=1,
            patches_per_hypothesis={proposal.hypothesis: 1},
            seen_hashes=[source_hash(proposal.source)],
            error="",
        )
    return delta
