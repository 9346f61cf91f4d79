"""Run traces: a versioned JSON-lines record of everything a repair run did, enough to replay it offline.

Each line is one event object with at least `v` (format version), `event` and `t` (seconds since the epoch).
Events: run_start, node_start, node_end (with the node's state delta), llm_request, llm_response, tool
(an evaluation: verdict, score and a digest of the full report), run_end. See README "Traces".
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, TypeVar

TRACE_VERSION = 1
_LOCK = threading.Lock()


def digest(data: Any) -> str:
    """A short stable digest of JSON-able data (reports are summarised by it in traces)."""
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def append_event(path: str | os.PathLike[str] | None, event: str, **fields: Any) -> None:
    """Append one event; a no-op without a path (a graph run in Studio may have none)."""
    if not path:
        return
    record = {"v": TRACE_VERSION, "event": event, "t": round(time.time(), 3), **fields}
    line = json.dumps(record, default=_jsonable)
    with _LOCK:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def read_trace(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete event of a trace (a torn last line from a killed run is ignored)."""
    events: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("v") != TRACE_VERSION:
                raise ValueError(
                    f"{path}:{number}: trace format version {event.get('v')}, expected {TRACE_VERSION}"
                )
            events.append(event)
    if not events or events[0].get("event") != "run_start":
        raise ValueError(f"{path}: not a kernel-medic trace (no run_start event)")
    return events


def next_step(path: str | os.PathLike[str] | None) -> int:
    """The step number the next node will get: one more than the node_end events already recorded."""
    if not path or not Path(path).exists():
        return 0
    with open(path, encoding="utf-8") as fh:
        return sum(1 for line in fh if '"event": "node_end"' in line)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, tuple)):
        return list(obj)
    return repr(obj)


_R = TypeVar("_R", bound="Recording")


class Recording:
    """A trace's recordings served in order, with one shared cursor per trace file within a process."""

    _by_trace: dict[str, Recording]
    _lock: threading.Lock

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._by_trace, cls._lock = {}, threading.Lock()

    def __init__(self, trace_path: str) -> None:
        self.trace_path = trace_path
        self.cursor = 0

    @classmethod
    def for_trace(cls: type[_R], trace_path: str) -> _R:
        with cls._lock:
            if trace_path not in cls._by_trace:
                cls._by_trace[trace_path] = cls(trace_path)
            return cls._by_trace[trace_path]  # type: ignore[return-value]

    @classmethod
    def reset(cls, trace_path: str) -> None:
        with cls._lock:
            cls._by_trace.pop(trace_path, None)


class RecordedRetrievals(Recording):
    """Serves a trace's recorded retrieve results in order: the knowledge base is outside state, like the LLM,
    and grows with every repair, so a replay must see what the original run saw."""

    def __init__(self, trace_path: str) -> None:
        super().__init__(trace_path)
        events = read_trace(trace_path)
        self.deltas = [e["delta"] for e in events if e["event"] == "node_end" and e["node"] == "retrieve"]

    def next(self) -> dict[str, Any] | None:
        """The next recorded retrieval, or None once the recording is used up (a fork that runs longer)."""
        with self._lock:
            if self.cursor >= len(self.deltas):
                return None
            self.cursor += 1
            return dict(self.deltas[self.cursor - 1])
