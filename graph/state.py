"""The repair graph's state: plain JSON-serialisable data, with reducers for what accumulates."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


def add_counts(left: dict[str, int] | None, right: dict[str, int] | None) -> dict[str, int]:
    """Merge per-key counters by addition (patches per hypothesis)."""
    merged = dict(left or {})
    for key, value in (right or {}).items():
        merged[key] = merged.get(key, 0) + value
    return merged


def best_version(state: RepairState) -> dict[str, Any]:
    """The best version's source, score, verdict and report: what going back restores."""
    return {k: state.get(f"best_{k}") for k in ("source", "score", "verdict", "report")}


class Attempt(TypedDict, total=False):
    iteration: int
    strategy: str  # offline | llm
    hypothesis: str  # the bug class the patch addresses
    rule: str  # the offline rule, or "llm"
    description: str
    diff: str
    diff_lines: int
    source_hash: str
    verdict: str
    score: float
    improved: bool  # became the new best (the rollback target)
    error: str | None


class RepairState(TypedDict, total=False):
    # -- the problem (set by intake) --
    reference_path: str
    candidate_path: str
    problem_name: str
    reference_source: str
    original_source: str
    config: dict[str, Any]
    trace_path: str
    # -- sources and scores --
    current_source: str  # the last patched source under evaluation
    best_source: str  # every patch applies to this one (rollback target)
    best_score: float
    best_verdict: str
    best_report: dict[str, Any]  # full-tier report of best_source
    initial_report: dict[str, Any]  # full-tier report of the candidate as given
    earlier_bests: list[dict[str, Any]]  # the bests this one was reached from, oldest first
    dead_ends: Annotated[list[dict[str, Any]], operator.add]  # bests left because nothing gained from them
    pending: dict[str, Any] | None  # the patch proposed by `patch`, for `verify`
    attempts: Annotated[list[Attempt], operator.add]
    # -- knowledge and findings --
    diagnosis: list[dict[str, Any]]  # ranked hypotheses
    pattern_ids: list[str]  # knowledge-base patterns retrieved for the diagnosis, best first
    patterns: list[dict[str, Any]]  # their summaries for the patch prompt: id, title, bug_class, fix
    rule_ids: list[str]  # offline rewrite rules in the order the patterns and hypotheses suggest
    instrumentation: Annotated[list[dict[str, Any]], operator.add]
    integrity: dict[str, Any]
    refused_source: str  # the last passing version the gate refused (patch may take it without its checks)
    feedback: str  # the last failure or audit finding, for the next patch
    distilled: dict[str, Any]
    # -- counters (reducers, so every node only reports its own increments) --
    iterations: Annotated[int, operator.add]
    llm_calls: Annotated[int, operator.add]
    input_tokens: Annotated[int, operator.add]
    output_tokens: Annotated[int, operator.add]
    wall_s: Annotated[float, operator.add]
    patches_per_hypothesis: Annotated[dict[str, int], add_counts]
    backtracks: Annotated[int, operator.add]
    no_progress: int
    llm_no_edit: int  # LLM rounds in a row whose answers held no applicable edit
    llm_answers: Annotated[list[dict[str, Any]], operator.add]  # every LLM answer: form, refusal, tokens
    llm_wall_s: Annotated[float, operator.add]  # time spent waiting for the LLM
    seen_hashes: Annotated[list[str], operator.add]
    exhausted: bool  # the patch strategy has nothing left to propose
    oscillation: bool  # the last proposal reproduced a source seen before
    # -- outcome --
    status: str  # running | repaired | unrepaired | rejected | invalid
    stop_reason: str
    error: str
