"""Batch repair: every problem folder under a directory, results in a resumable SQLite database.

One row per case in OUT/results.sqlite, written by one writer thread as each case starts and finishes (WAL),
so a killed batch reruns only what it had not finished. Each case keeps its own trace and checkpoint file
under OUT/cases/, so concurrent repairs never share a SQLite file and an interrupted case resumes from its
last graph checkpoint instead of starting over.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.drivers.batch_case import (
    BatchCase,
    Hooks,
    Row,
    discover,
    repair_case,
    started_row,
)
from kernel_medic.tools.evaluation.problem import InvalidProblem

RESULTS_DB = "results.sqlite"
FINISHED = ("repaired", "unrepaired", "rejected", "invalid", "failed")
COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "TEXT PRIMARY KEY"),
    ("folder", "TEXT"),
    ("status", "TEXT"),  # running | repaired | unrepaired | rejected | invalid | failed
    ("stop_reason", "TEXT"),
    ("score", "REAL"),
    ("diff", "TEXT"),
    ("diff_lines", "INTEGER"),
    ("iterations", "INTEGER"),
    ("llm_calls", "INTEGER"),
    ("input_tokens", "INTEGER"),
    ("output_tokens", "INTEGER"),
    ("wall_s", "REAL"),
    ("integrity", "TEXT"),
    ("trace_path", "TEXT"),
    ("report_path", "TEXT"),
    ("thread_id", "TEXT"),
    ("tries", "INTEGER"),
    ("worker", "TEXT"),
    ("error", "TEXT"),
    ("started_at", "REAL"),
    ("finished_at", "REAL"),
)
NAMES = tuple(name for name, _ in COLUMNS)


class ResultsDB:
    """The results table. Not thread-safe by design: one writer thread owns each connection."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")  # a row the progress bar counted survives a SIGKILL
        cols = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS results ({cols})")
        self.conn.commit()

    def upsert(self, row: Row) -> None:
        values = [row.get(name) for name in NAMES]
        marks = ", ".join("?" for _ in NAMES)
        self.conn.execute(f"INSERT OR REPLACE INTO results ({', '.join(NAMES)}) VALUES ({marks})", values)
        self.conn.commit()

    def rows(self) -> list[Row]:
        cur = self.conn.execute(f"SELECT {', '.join(NAMES)} FROM results ORDER BY name")
        return [dict(zip(NAMES, values)) for values in cur.fetchall()]

    def close(self) -> None:
        self.conn.close()


def read_rows(out: str | os.PathLike[str]) -> list[Row]:
    """The batch's rows as they are on disk now (safe while a batch is writing: WAL readers never block)."""
    path = Path(out) / RESULTS_DB
    if not path.exists():
        return []
    db = ResultsDB(path)
    try:
        return db.rows()
    finally:
        db.close()


class ResultWriter:
    """The single writer: rows from any thread are queued and written, in order, by one thread."""

    def __init__(self, path: Path) -> None:
        self._queue: queue.Queue[Row | None] = queue.Queue()
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(path,), name="kmedic-results", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise InvalidProblem(f"{path}: cannot open the results database: {self._error}")

    def put(self, row: Row) -> None:
        self._queue.put(dict(row))

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise RuntimeError(f"writing the results database failed: {self._error}")

    def _loop(self, path: Path) -> None:
        try:
            db = ResultsDB(path)
        except (sqlite3.Error, OSError) as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while (row := self._queue.get()) is not None:
                db.upsert(row)
        except sqlite3.Error as exc:  # surfaced by close(); the batch must not report rows it lost
            self._error = exc
        finally:
            db.close()


class Progress:
    """A one-line progress bar on stderr: counts by status and an ETA from this run's pace."""

    def __init__(self, total: int, already: list[Row], workers: int, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.counts: dict[str, int] = {}
        for row in already:
            self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1
        self.done_before = len(already)
        self.done_now = 0
        self.running = 0
        self.workers = max(1, workers)
        self.start = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()

    def started(self, row: Row) -> None:
        with self._lock:
            self.running += 1
            self._draw()

    def finished(self, row: Row) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)
            self.done_now += 1
            self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1
            self._draw(row)

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def line(self) -> str:
        done = self.done_before + self.done_now
        width = 24
        filled = int(width * done / self.total) if self.total else width
        counts = "  ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        bar = "#" * filled + "." * (width - filled)
        return f"[{bar}] {done}/{self.total}  {counts}  running {self.running}  ETA {self.eta()}"

    def eta(self) -> str:
        remaining = self.total - self.done_before - self.done_now
        if remaining <= 0:
            return "0:00"
        if not self.done_now:
            return "?"
        seconds = (time.monotonic() - self.start) / self.done_now * remaining
        return f"{int(seconds // 60)}:{int(seconds % 60):02d}"

    def _draw(self, row: Row | None = None) -> None:
        if self.tty:
            self.stream.write("\r" + self.line())
        elif row is not None:
            self.stream.write(f"{self.line()}  <- {row['name']}: {row['status']}\n")
        self.stream.flush()


@dataclass
class BatchRun:
    out: Path
    database: Path
    rows: list[Row]
    skipped: int  # finished in an earlier run, not redone
    ran: int
    wall_s: float
    executor: str
    workers: int
    index_path: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "database": str(self.database),
            "index": self.index_path,
            "executor": self.executor,
            "workers": self.workers,
            "total": len(self.rows),
            "skipped": self.skipped,
            "ran": self.ran,
            "wall_s": round(self.wall_s, 3),
            "counts": self.counts,
            "cases": [{k: v for k, v in row.items() if k != "diff"} for row in self.rows],
        }


def run_batch(
    root: str | os.PathLike[str],
    out: str | os.PathLike[str],
    config: RepairConfig,
    *,
    executor: str = "local",
    workers: int = 2,
    ray_address: str | None = None,
    html: bool = True,
    stream: TextIO | None = None,
) -> BatchRun:
    """Repair every case under ROOT that OUT's database does not already hold as finished."""
    if workers < 1:
        raise InvalidProblem("--workers must be at least 1")
    if executor not in ("local", "ray"):
        raise InvalidProblem(f"unknown executor {executor!r}: expected local or ray")
    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError as exc:
            raise InvalidProblem("--executor ray needs Ray: pip install 'kernel-medic[ray]'") from exc
    cases = discover(root)
    out_dir = Path(out)
    database = out_dir / RESULTS_DB
    existing = {row["name"]: row for row in read_rows(out_dir)}
    finished = [existing[c.name] for c in cases if existing.get(c.name, {}).get("status") in FINISHED]
    done_names = {row["name"] for row in finished}
    todo = [c for c in cases if c.name not in done_names]
    progress = Progress(len(cases), finished, workers, stream)
    writer = ResultWriter(database)
    start = time.monotonic()

    def on_start(row: Row) -> None:
        writer.put(row)
        progress.started(row)

    def on_done(row: Row) -> None:
        writer.put(row)
        progress.finished(row)

    try:
        if todo and executor == "local":
            run_local(todo, config, out_dir, workers, html, (on_start, on_done))
        elif todo:
            from kernel_medic.graph.drivers.ray_executor import run_ray

            run_ray(todo, config, out_dir, workers, html, (on_start, on_done), address=ray_address)
    finally:
        writer.close()
        progress.close()
    names = {c.name for c in cases}
    rows = [row for row in read_rows(out_dir) if row["name"] in names]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    run = BatchRun(
        out_dir,
        database,
        rows,
        len(finished),
        len(todo),
        time.monotonic() - start,
        executor,
        workers,
        counts=counts,
    )
    if html:
        from kernel_medic.graph.drivers.html_report import write_index

        run.index_path = str(write_index(rows, out_dir))
    return run


def run_local(
    cases: Iterable[BatchCase], config: RepairConfig, out: Path, workers: int, html: bool, hooks: Hooks
) -> None:
    """N repairs in threads of this process, sharing one evaluator pool of N sandbox workers."""
    config = RepairConfig.from_dict({**config.to_dict(), "workers": workers})
    on_start, on_done = hooks

    def one(case: BatchCase) -> None:
        on_start(started_row(case, out, "local"))
        on_done(repair_case(case, config, out, html=html, worker="local"))

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kmedic-batch") as pool:
        for future in [pool.submit(one, case) for case in cases]:
            future.result()


def summary_table(run: BatchRun) -> str:
    lines = [
        f"{'case':<44} {'status':<11} {'stop':<20} {'score':>7} {'iters':>5} {'diff':>5} {'wall s':>7}",
    ]
    for row in run.rows:
        lines.append(
            f"{row['name'][:44]:<44} {row['status']:<11} {(row['stop_reason'] or '')[:20]:<20} "
            f"{(row['score'] or 0.0):>7.4f} {row['iterations'] or 0:>5} {row['diff_lines'] or 0:>5} "
            f"{(row['wall_s'] or 0.0):>7.1f}"
        )
    counts = ", ".join(f"{k} {v}" for k, v in sorted(run.counts.items()))
    rate = run.ran / run.wall_s * 60 if run.wall_s > 0 and run.ran else 0.0
    lines += [
        "",
        f"{len(run.rows)} cases: {counts}. Ran {run.ran} now ({run.skipped} already finished) with "
        f"{run.workers} {run.executor} workers in {run.wall_s:.1f} s ({rate:.1f} cases/min).",
        f"results: {run.database}" + (f"   index: {run.index_path}" if run.index_path else ""),
    ]
    return "\n".join(lines)
