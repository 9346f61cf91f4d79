"""verify: evaluate the proposed patch (light tier first, full tier when it can beat the best), or take the
offline search's own full-tier run of it."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from kernel_medic.graph.runtime import config_of, evaluator_for, problem_for, traced
from kernel_medic.graph.state import Attempt, RepairState, best_version
from kernel_medic.tools.evaluation import crashes
from kernel_medic.tools.evaluation.evaluate import EvalReport
from kernel_medic.tools.evaluation.mismatch import SCORE_NOISE, closer
from kernel_medic.tools.evaluation.problem import Problem
from kernel_medic.tools.repair.edits import diff_stats, unified_diff
from kernel_medic.tools.repair.search import passing_cases
from kernel_medic.tools.trace import append_event, digest, source_hash

VERIFY_FLOOR_S = 30.0
"""The least time a patch's checks get, light and full tier together, even once the run's wall budget is
spent (the search's own proposals come verified, so this bounds an LLM's or a crash rule's late patch)."""


@traced("verify")
def verify(state: RepairState) -> dict[str, Any]:
    pending = state["pending"] or {}
    source = pending["source"]
    problem = problem_for(state).with_candidate(source)
    known = pending.get("full_report")
    if known:
        # The search already ran this source on the full tier (search.full_report): the same evaluation.
        report = known
        trace = state.get("trace_path")
        verdict, score = known.get("verdict"), known.get("score")
        append_event(trace, "tool", name="evaluate", tier="full", reused=True, verdict=verdict, score=score)
    else:
        report = _evaluate(problem, state)
    best_score = state.get("best_score", -1.0)
    # A crash scores 0 whatever its cause: at an equal score, a crash that got further is progress too.
    best_report = state.get("best_report") or {}
    # At an equal score, numbers much nearer the reference are progress too (one of two bugs fixed).
    moved_on = (report["score"] == best_score and crashes.progress(best_report, report)) or (
        report["score"] <= best_score and closer(best_report, report)
    )
    improved = report["tier"] == "full" and (
        report["score"] > best_score + _least_gain(pending, report, state) or moved_on
    )
    diff = unified_diff(state["best_source"], source, path=problem.candidate_path.name)
    attempt: Attempt = {
        "iteration": state.get("iterations", 0),
        "strategy": pending["strategy"],
        "hypothesis": pending["hypothesis"],
        "rule": pending["rule"],
        "description": pending["description"],
        "diff": diff,
        "diff_lines": diff_stats(state["best_source"], source)["changed_lines"],
        "source_hash": source_hash(source),
        "verdict": report["verdict"],
        "score": report["score"],
        "improved": improved and report["verdict"] != "pass",
        "error": None,
    }
    delta: dict[str, Any] = {"attempts": [attempt], "current_source": source}
    if report["verdict"] == "pass":
        # Not the best yet: only a clean audit makes a passing patch the result.
        rest = {k: v for k, v in pending.items() if k != "full_report"}
        delta["pending"] = {**rest, "score": report["score"], "report": report}
        return delta
    delta["pending"] = None
    if improved:
        delta.update(
            earlier_bests=[*(state.get("earlier_bests") or []), best_version(state)],
            best_source=source,
            best_score=report["score"],
            best_verdict=report["verdict"],
            best_report=report,
            no_progress=0,
            feedback="",
        )
    else:
        delta.update(
            no_progress=state.get("no_progress", 0) + 1,
            feedback=f"The last patch ({pending['description']}) gave {report['verdict']} with score "
            f"{report['score']:.4f}, no better than the best {state.get('best_score', 0.0):.4f}.",
        )
    return delta


def _least_gain(pending: dict[str, Any], report: dict[str, Any], state: RepairState) -> float:
    """What a patch must add to the best score to count as progress.

    A blind mutation (a bound ±1, a flipped comparison, a changed literal) that makes no further case pass
    moves a few elements at best; kept, it becomes the base of every later edit: a threshold crept up by 1 per
    iteration for 200 s, a `<` became `<=` beside a store mask that was the bug. Such a patch must gain
    as much as the score's noise. A typed edit or a rule is progress at any gain (a grid fix gained 0.0003
    first).
    """
    if not str(pending.get("rule", "")).startswith("mut_"):
        return 0.0
    if passing_cases(report) - passing_cases(state.get("best_report") or {}):
        return 0.0
    return SCORE_NOISE


def _evaluate(problem: Problem, state: RepairState) -> dict[str, Any]:
    evaluator = evaluator_for(config_of(state))
    # Both tiers stop with the run's wall budget (a grid edit's full tier took 216 s on a loaded machine; a
    # hung light case took the problem's whole 60 s after the budget was spent): cases cut short count as
    # timeouts, so the deadline can fail a patch, never pass it.
    left = max(VERIFY_FLOOR_S, config_of(state).wall_budget_s - state.get("wall_s", 0.0))
    deadline = time.monotonic() + left
    cut = left < problem.config.timeout_s
    if cut:
        problem = dataclasses.replace(problem, config=dataclasses.replace(problem.config, timeout_s=left))
    light = _run(evaluator.evaluate(problem, tier="light", deadline=deadline), state, "light")
    best_light = _light_score(state.get("best_report") or {})
    report = light
    # The light case is one case of the full tier: a patch that does worse there cannot beat the best. One
    # that ties may still fix what only the full tier exercises (layouts, odd shapes, magnitudes). One that
    # hangs or kills its worker on the light case can neither beat nor follow a crash (a timeout has no
    # stage), and would cost the full tier's time limit per case.
    hung = light.verdict in ("timeout", "crash")
    # Within the noise of a few chance elements, a lower light score may still be nearer (mismatch.closer).
    near = light.score >= best_light - SCORE_NOISE
    if light.verdict == "pass" or (near and not (hung and light.score == 0)):
        if cut:
            limit = max(1.0, deadline - time.monotonic())
            config = dataclasses.replace(problem.config, timeout_s=limit)
            problem = dataclasses.replace(problem, config=config)
        report = _run(evaluator.evaluate(problem, tier="full", deadline=deadline), state, "full")
    return report.to_dict()


def _run(report: EvalReport, state: RepairState, tier: str) -> EvalReport:
    append_event(
        state.get("trace_path"),
        "tool",
        name="evaluate",
        tier=tier,
        verdict=report.verdict,
        score=report.score,
        digest=digest(report.to_dict()),
        wall_s=report.wall_s,
    )
    return report


def _light_score(report: dict[str, Any]) -> float:
    for case in report.get("cases") or []:
        if case["name"].startswith("seed"):
            return case["correct"] / case["numel"] if case["numel"] else 0.0
    return 0.0
