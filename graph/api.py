"""Public API: `repair(reference, candidate, config) -> RepairResult`, checkpointed, traced and resumable."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_medic.graph.builder import build_graph
from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.runtime import INVOCATION
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.paths import data_dir
from kernel_medic.tools.repair.edits import diff_stats, unified_diff
from kernel_medic.tools.trace import append_event
from langgraph.checkpoint.sqlite import SqliteSaver

ProgressFn = Callable[[str, dict[str, Any]], None]


@dataclass
class RepairResult:
    status: str  # repaired | unrepaired | rejected | invalid
    stop_reason: str
    score: float
    repaired_source: str | None  # only when status is repaired
    best_source: str  # the best attempt, repaired or not
    diff: str  # original -> best
    diff_lines: int
    attempts: list[dict[str, Any]]
    iterations: int
    llm_calls: int
    tokens: dict[str, int]
    wall_s: float
    integrity: dict[str, Any]
    trace_path: str
    thread_id: str
    error: str = ""
    distilled: dict[str, Any] = field(default_factory=dict)
    # The crash the candidate as given showed (class, line, exception, evidence); None when it did not crash.
    crash: dict[str, Any] | None = None
    # What the final evaluation found outside the verdict: layout assumptions, shapes outside the domain.
    warnings: list[str] = field(default_factory=list)
    # Every LLM answer (form read, why refused, tokens, wall) and the time spent waiting for the LLM.
    llm_answers: list[dict[str, Any]] = field(default_factory=list)
    llm_wall_s: float = 0.0
    start_verdict: str = ""  # the candidate as given
    final_verdict: str = ""  # the best version's (a crash repaired into a near-miss ends as "mismatch")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def recursion_limit(config: RepairConfig) -> int:
    """A backstop only: the guard ends every run long before this (one loop is at most ~6 supersteps)."""
    return 10 * (config.max_iterations + 4)


def repair(
    reference: str | os.PathLike[str],
    candidate: str | os.PathLike[str] | None = None,
    config: RepairConfig | None = None,
    *,
    trace: str | os.PathLike[str] | None = None,
    thread_id: str | None = None,
    checkpoint_db: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
) -> RepairResult:
    """Repair a near-miss candidate against its reference (or a problem folder). Never raises on bad input:
    the result's status says `invalid` with the reason in `error`."""
    config = config or RepairConfig.from_env()
    thread_id = thread_id or uuid.uuid4().hex[:12]
    trace_path = str(trace or data_dir() / "traces" / f"{thread_id}.jsonl")
    inputs: RepairState = {
        "reference_path": str(reference),
        "candidate_path": str(candidate) if candidate is not None else "",
        "config": config.to_dict(),
        "trace_path": trace_path,
    }
    append_event(
        trace_path,
        "run_start",
        thread_id=thread_id,
        config=config.to_dict(),
        files=_problem_files(reference, candidate),
        reference_path=str(reference),
        candidate_path=str(candidate) if candidate is not None else None,
    )
    return _run(inputs, config, thread_id, checkpoint_db, progress)


def resume(
    thread_id: str, *, checkpoint_db: str | os.PathLike[str] | None = None, progress: ProgressFn | None = None
) -> RepairResult:
    """Continue a run that was interrupted (killed, crashed) from its last checkpoint."""
    thread = {"configurable": {"thread_id": thread_id}}
    with _checkpointer(checkpoint_db) as saver:
        snapshot = build_graph(saver).get_state(thread)
        saved = saver.get_tuple(thread)
    # A run killed right after its first checkpoint holds its inputs unapplied, in the `__start__` channel;
    # the state then has only reducer defaults, and resuming runs `__start__` from those inputs.
    pending = saved.checkpoint["channel_values"].get("__start__") if saved else None
    values = snapshot.values if "config" in snapshot.values else pending
    if not isinstance(values, dict) or "config" not in values:
        raise ValueError(f"no checkpointed run with thread id {thread_id!r}")
    config = RepairConfig.from_dict(values["config"])
    return _run(None, config, thread_id, checkpoint_db, progress)


async def arepair(
    reference: str | os.PathLike[str],
    candidate: str | os.PathLike[str] | None = None,
    config: RepairConfig | None = None,
    **kwargs: Any,
) -> RepairResult:
    """`repair` for asyncio callers: nodes block on sandboxed evaluations, so the graph runs in a thread."""
    return await asyncio.to_thread(repair, reference, candidate, config, **kwargs)


def _run(
    inputs: RepairState | None,
    config: RepairConfig,
    thread_id: str,
    checkpoint_db: str | os.PathLike[str] | None,
    progress: ProgressFn | None,
) -> RepairResult:
    run_config = {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit(config)}
    token = INVOCATION.set(uuid.uuid4().hex)
    try:
        return _stream(inputs, run_config, thread_id, checkpoint_db, progress)
    finally:
        INVOCATION.reset(token)


def _stream(
    inputs: RepairState | None,
    run_config: dict[str, Any],
    thread_id: str,
    checkpoint_db: str | os.PathLike[str] | None,
    progress: ProgressFn | None,
) -> RepairResult:
    with _checkpointer(checkpoint_db) as saver:
        graph = build_graph(saver)
        for update in graph.stream(inputs, run_config, stream_mode="updates"):
            for node, delta in update.items():
                if progress is not None:
                    progress(node, delta or {})
        state: RepairState = graph.get_state(run_config).values  # type: ignore[assignment]
    result = result_from_state(state, thread_id)
    append_event(
        state.get("trace_path"),
        "run_end",
        status=result.status,
        stop_reason=result.stop_reason,
        score=result.score,
        iterations=result.iterations,
        diff_lines=result.diff_lines,
    )
    return result


def result_from_state(state: RepairState, thread_id: str) -> RepairResult:
    original = state.get("original_source", "")
    best = state.get("best_source", original)
    score = float(state.get("best_score", 0.0) or 0.0)
    best_report = state.get("best_report") or {}
    status = state.get("status", "unrepaired")
    if status == "running":  # a graph that ended without a verdict is a bug, never a silent success
        status, reason = "unrepaired", "ended_without_verdict"
    else:
        reason = state.get("stop_reason", "")
    if status != "repaired":
        # A dead end the run went back from may have scored higher than where it stopped: the best attempt.
        for dead in state.get("dead_ends") or []:
            if float(dead.get("score") or 0.0) > score:
                best, score, best_report = dead["source"], float(dead["score"]), dead.get("report") or {}
    name = Path(state.get("candidate_path") or "candidate.py").name
    return RepairResult(
        status=status,
        stop_reason=reason,
        score=score,
        repaired_source=best if status == "repaired" else None,
        best_source=best,
        diff=unified_diff(original, best, path=name) if original else "",
        diff_lines=diff_stats(original, best)["changed_lines"] if original else 0,
        attempts=list(state.get("attempts") or []),
        iterations=int(state.get("iterations", 0)),
        llm_calls=int(state.get("llm_calls", 0)),
        tokens={"input": int(state.get("input_tokens", 0)), "output": int(state.get("output_tokens", 0))},
        wall_s=round(float(state.get("wall_s", 0.0)), 3),
        integrity=dict(state.get("integrity") or {}),
        trace_path=state.get("trace_path", ""),
        thread_id=thread_id,
        # The error that ended the run (bad input, an LLM that stayed unreachable or never gave an applicable
        # edit); an unrepaired run also keeps the last patch-level one, so a JSON result never hides it.
        error=state.get("error", "") if status != "repaired" else "",
        distilled=dict(state.get("distilled") or {}),
        crash=(state.get("initial_report") or {}).get("crash"),
        warnings=list(best_report.get("warnings") or []),
        llm_answers=list(state.get("llm_answers") or []),
        llm_wall_s=round(float(state.get("llm_wall_s", 0.0)), 3),
        start_verdict=str((state.get("initial_report") or {}).get("verdict", "")),
        final_verdict=str(state.get("best_verdict", "") or ""),
    )


class _checkpointer:
    """A SQLite checkpointer on a file, closed with the run."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else data_dir() / "checkpoints.sqlite"

    def __enter__(self) -> SqliteSaver:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False)
        return SqliteSaver(self._conn)

    def __exit__(self, *exc: object) -> None:
        with closing(self._conn):
            pass


def _problem_files(
    reference: str | os.PathLike[str], candidate: str | os.PathLike[str] | None
) -> dict[str, str]:
    """The run's input files, verbatim: a replay must not depend on them still existing unchanged."""
    ref = Path(reference)
    if candidate is None and ref.is_dir():
        paths = [ref / "reference.py", ref / "candidate.py", ref / "problem.toml"]
    else:
        cand = Path(candidate) if candidate is not None else ref
        paths = [ref, cand, cand.parent / "problem.toml"]
    names = ["reference.py", "candidate.py", "problem.toml"]
    files: dict[str, str] = {}
    for name, path in zip(names, paths):
        try:
            files[name] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return files
