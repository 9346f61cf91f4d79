"""Replay a recorded run offline: the recorded LLM responses stand in for the LLM, everything else re-runs.

`replay(trace)` re-runs the graph on the trace's own copy of the input files and checks that it takes the
same path through the nodes, proposes the same patches and ends with the same verdict. `replay(trace,
from_step=N, changes=...)` re-runs up to step N, then forks the run there with a changed configuration.
"""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_medic.graph.api import RepairResult, _checkpointer, recursion_limit, repair, result_from_state
from kernel_medic.graph.builder import build_graph
from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.repair.llm import RecordedChatModel
from kernel_medic.tools.trace import RecordedRetrievals, append_event, read_trace


@dataclass
class ReplayReport:
    same: bool
    differences: list[str]
    recorded: dict[str, Any]
    replayed: dict[str, Any]
    result: dict[str, Any]
    trace_path: str
    forked_at: int | None = None
    changes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a replay must reproduce: the node path, the patches (by source hash) and the verdict."""
    nodes = [e["node"] for e in events if e["event"] == "node_end"]
    patches = [
        attempt["source_hash"]
        for e in events
        if e["event"] == "node_end" and e["node"] == "verify"
        for attempt in e["delta"].get("attempts", [])
    ]
    end = next((e for e in reversed(events) if e["event"] == "run_end"), {})
    return {
        "nodes": nodes,
        "patches": patches,
        "status": end.get("status"),
        "stop_reason": end.get("stop_reason"),
    }


def replay(
    trace_path: str | Path,
    *,
    from_step: int | None = None,
    changes: dict[str, Any] | None = None,
    workdir: str | Path | None = None,
) -> ReplayReport:
    trace_path = str(Path(trace_path).resolve())
    if workdir is not None:
        return _replay_in(Path(workdir), trace_path, from_step, changes, None)
    # The scratch folder (input files, checkpoints) goes when the replay ends; the new trace is kept next to
    # the recorded one, since reports name it.
    original = Path(trace_path)
    kept = original.with_name(
        f"{original.stem}.{'replay' if from_step is None else f'fork{from_step}'}.jsonl"
    )
    with tempfile.TemporaryDirectory(prefix="kmedic-replay-") as scratch:
        try:
            kept.unlink(missing_ok=True)
            kept.touch()
        except OSError:  # a read-only trace folder: the replay's trace stays in the scratch folder's place
            kept = Path.cwd() / kept.name
            kept.unlink(missing_ok=True)
        return _replay_in(Path(scratch), trace_path, from_step, changes, kept)


def _replay_in(
    folder: Path,
    trace_path: str,
    from_step: int | None,
    changes: dict[str, Any] | None,
    kept: Path | None,
) -> ReplayReport:
    events = read_trace(trace_path)
    start = events[0]
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in start["files"].items():
        (folder / name).write_text(text, encoding="utf-8")
    config = RepairConfig.from_dict({**start["config"], "llm_replay": trace_path})
    new_trace = str(kept or folder / "replay.jsonl")
    if kept is not None:
        kept.unlink(missing_ok=True)
    RecordedChatModel.reset(trace_path)
    RecordedRetrievals.reset(trace_path)
    recorded = summary(events)
    if from_step is None:
        result = repair(folder, None, config, trace=new_trace, checkpoint_db=folder / "checkpoints.sqlite")
        replayed = summary(read_trace(new_trace))
        differences = [
            f"{key}: recorded {recorded[key]!r}, replayed {replayed[key]!r}"
            for key in recorded
            if recorded[key] != replayed[key]
        ]
        return ReplayReport(not differences, differences, recorded, replayed, result.to_dict(), new_trace)
    result = _fork(folder, config, new_trace, from_step, changes or {}, start["files"])
    replayed = summary(read_trace(new_trace))
    return ReplayReport(
        same=False,
        differences=[],
        recorded=recorded,
        replayed=replayed,
        result=result.to_dict(),
        trace_path=new_trace,
        forked_at=from_step,
        changes=changes or {},
    )


def _fork(
    folder: Path, config: RepairConfig, trace: str, step: int, changes: dict[str, Any], files: dict[str, str]
) -> RepairResult:
    """Re-run with the recorded responses until `step` nodes have finished, then continue with `changes`."""
    if step < 1:
        raise ValueError("--from-step must be at least 1 (the fork needs intake's state)")
    thread_id = uuid.uuid4().hex[:12]
    new_config = RepairConfig.from_dict({**config.to_dict(), **changes})
    run_config = {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit(new_config)}
    inputs = {
        "reference_path": str(folder),
        "candidate_path": "",
        "config": config.to_dict(),
        "trace_path": trace,
    }
    append_event(
        trace, "run_start", thread_id=thread_id, config=config.to_dict(), files=files, forked_from_step=step
    )
    with _checkpointer(folder / "checkpoints.sqlite") as saver:
        graph = build_graph(saver)
        finished = 0
        for _ in graph.stream(inputs, run_config, stream_mode="updates"):
            finished += 1
            if finished >= step:
                break
        snapshot = graph.get_state(run_config)
        if snapshot.next:  # the run had not ended by then: fork it with the changed configuration
            forked = graph.update_state(snapshot.config, {"config": new_config.to_dict()})
            for _ in graph.stream(None, {**forked, "recursion_limit": run_config["recursion_limit"]}):
                pass
        # The thread's latest checkpoint (a config naming a checkpoint id would read that one instead).
        state = graph.get_state({"configurable": {"thread_id": thread_id}}).values
    result = result_from_state(state, thread_id)
    append_event(
        trace,
        "run_end",
        status=result.status,
        stop_reason=result.stop_reason,
        score=result.score,
        iterations=result.iterations,
        diff_lines=result.diff_lines,
    )
    return result
