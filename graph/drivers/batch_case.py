"""One case of a batch: its folder, its result row, and its repair (resumed from its checkpoint if killed).

Shared by the local executor (`batch.py`) and the Ray executor (`ray_executor.py`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.evaluation.problem import InvalidProblem

Row = dict[str, Any]
Hooks = tuple[Callable[[Row], None], Callable[[Row], None]]


@dataclass(frozen=True)
class BatchCase:
    name: str  # the folder relative to the batch root (posix), unique within a batch
    folder: Path

    @property
    def slug(self) -> str:
        return self.name.replace("/", "__") or "case"

    @property
    def thread_id(self) -> str:
        return "batch-" + hashlib.sha256(self.name.encode()).hexdigest()[:12]


def discover(root: str | os.PathLike[str]) -> list[BatchCase]:
    """Every folder under ROOT (itself included) holding reference.py and candidate.py, sorted by name."""
    base = Path(root)
    if not base.is_dir():
        raise InvalidProblem(f"{base}: no such directory")
    folders = sorted({p.parent for p in base.rglob("reference.py") if (p.parent / "candidate.py").is_file()})
    cases = [
        BatchCase(f.relative_to(base).as_posix() if f != base else base.name, f.resolve()) for f in folders
    ]
    if not cases:
        raise InvalidProblem(f"{base}: no problem folders (reference.py + candidate.py) found")
    return cases


def case_dir(out: Path, case: BatchCase) -> Path:
    return out / "cases" / case.slug


def started_row(case: BatchCase, out: Path, worker: str, tries: int = 1) -> Row:
    folder = case_dir(out, case)
    return {
        "name": case.name,
        "folder": str(case.folder),
        "status": "running",
        "trace_path": str(folder / "trace.jsonl"),
        "thread_id": case.thread_id,
        "tries": tries,
        "worker": worker,
        "started_at": time.time(),
    }


def failed_row(case: BatchCase, out: Path, error: str, tries: int, started_at: float, worker: str) -> Row:
    return {
        **started_row(case, out, worker, tries),
        "status": "failed",
        "stop_reason": "error",
        "score": 0.0,
        "error": error,
        "started_at": started_at,
        "finished_at": time.time(),
    }


def repair_case(
    case: BatchCase,
    config: RepairConfig,
    out: Path,
    *,
    html: bool = True,
    worker: str = "local",
    tries: int = 1,
) -> Row:
    """Repair one case (resuming its checkpointed run if an earlier batch was killed in the middle of it)."""
    from kernel_medic.graph.api import repair, resume

    folder = case_dir(out, case)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.time()
    trace, checkpoint = folder / "trace.jsonl", folder / "checkpoint.sqlite"
    try:
        try:
            result = resume(case.thread_id, checkpoint_db=checkpoint) if checkpoint.exists() else None
        except ValueError:  # killed before the first checkpoint: nothing to resume
            result = None
        if result is None:
            trace.unlink(missing_ok=True)
            result = repair(
                case.folder, None, config, trace=trace, thread_id=case.thread_id, checkpoint_db=checkpoint
            )
    except Exception as exc:  # one broken case must not end the batch; the row says what happened
        return failed_row(case, out, f"{type(exc).__name__}: {exc}", tries, started, worker)
    report_path = ""
    if html:
        from kernel_medic.graph.drivers.html_report import write_html_report

        try:
            report_path = str(write_html_report(result, folder, case.folder, config=config))
        except Exception as exc:  # a report is a view of the result, never a reason to lose it
            sys.stderr.write(f"kmedic batch: {case.name}: no HTML report: {type(exc).__name__}: {exc}\n")
    return {
        "name": case.name,
        "folder": str(case.folder),
        "status": result.status,
        "stop_reason": result.stop_reason,
        "score": result.score,
        "diff": result.diff,
        "diff_lines": result.diff_lines,
        "iterations": result.iterations,
        "llm_calls": result.llm_calls,
        "input_tokens": result.tokens.get("input", 0),
        "output_tokens": result.tokens.get("output", 0),
        "wall_s": result.wall_s,
        "integrity": result.integrity.get("verdict", "not_audited"),
        "trace_path": result.trace_path,
        "report_path": report_path,
        "thread_id": case.thread_id,
        "tries": tries,
        "worker": worker,
        "error": result.error,
        "started_at": started,
        "finished_at": time.time(),
    }
