"""Process-level services the nodes share but the state cannot hold: warm worker pools, problems, LLM clients.

State stays plain JSON (so it checkpoints, resumes and shows in Studio); anything live is looked up here by
a key derived from the state, and rebuilt on demand after a restart.
"""

from __future__ import annotations

import atexit
import contextvars
import functools
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import Problem, load_problem
from kernel_medic.tools.trace import append_event, next_step

_LOCK = threading.Lock()
_EVALUATORS: dict[tuple[str, int | None], Evaluator] = {}
_PROBLEMS: dict[tuple[str, str, str | None], Problem] = {}


class ChatModel(Protocol):
    """What the patch node needs from an LLM: messages in, text and token usage out."""

    def complete(self, messages: list[dict[str, str]]) -> Any: ...


# One `repair()`/`resume()` call: what a search caches per run is keyed by it too, so a run resumed in the
# same process decides as it would in a fresh one (after a kill) instead of reading the first call's cache.
INVOCATION: contextvars.ContextVar[str] = contextvars.ContextVar("kmedic_invocation", default="")


def config_of(state: RepairState) -> RepairConfig:
    return RepairConfig.from_dict(dict(state.get("config") or {}))


def evaluator_for(config: RepairConfig) -> Evaluator:
    key = (config.device, config.workers)
    with _LOCK:
        if key not in _EVALUATORS:
            _EVALUATORS[key] = Evaluator(device=config.device, workers=config.workers)
        return _EVALUATORS[key]


def problem_for(state: RepairState) -> Problem:
    """The problem as loaded from the run's files (cached per process)."""
    tolerance = config_of(state).tolerance
    key = (state["reference_path"], state["candidate_path"], tolerance)
    with _LOCK:
        if key not in _PROBLEMS:
            _PROBLEMS[key] = load_problem(key[0], key[1]).with_tolerance(tolerance)
        problem = _PROBLEMS[key]
    return problem.with_candidate(state.get("original_source", problem.candidate_source))


def chat_model_for(config: RepairConfig, trace_path: str | None) -> ChatModel:
    if config.llm_replay:
        from kernel_medic.tools.repair.llm import RecordedChatModel

        return RecordedChatModel.for_trace(config.llm_replay)
    from kernel_medic.tools.repair.llm import LLMClient, LLMSettings

    return LLMClient(
        LLMSettings.from_env(
            model=config.model,
            base_url=config.base_url,
            timeout_s=config.llm_timeout_s,
            max_output_tokens=config.llm_max_output_tokens,
            fill_in=config.llm_fill_in,
        )
    )


def close_all() -> None:
    with _LOCK:
        evaluators = list(_EVALUATORS.values())
        _EVALUATORS.clear()
        _PROBLEMS.clear()
    for ev in evaluators:
        ev.close()


atexit.register(close_all)

NodeFn = Callable[[RepairState], dict[str, Any]]


def traced(name: str) -> Callable[[NodeFn], NodeFn]:
    """Record node start and end (state delta, timing) in the run's trace, and count wall time."""

    def wrap(fn: NodeFn) -> NodeFn:
        @functools.wraps(fn)
        def node(state: RepairState) -> dict[str, Any]:
            path = state.get("trace_path")
            step = next_step(path)
            append_event(path, "node_start", step=step, node=name)
            start = time.monotonic()
            delta = fn(state)
            elapsed = time.monotonic() - start
            delta = {**delta, "wall_s": elapsed}
            trace_delta = {k: v for k, v in delta.items() if k != "wall_s"}
            append_event(
                path or delta.get("trace_path"),
                "node_end",
                step=step,
                node=name,
                duration_s=round(elapsed, 3),
                delta=trace_delta,
            )
            return delta

        return node

    return wrap
