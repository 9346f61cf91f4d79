"""Ray executor for `kmedic batch`: one long-lived actor per worker slot, each keeping its own warm sandbox
pool across cases; a case whose worker dies is retried once on a fresh actor, then recorded as failed.

Install with `pip install kernel-medic[ray]`. Without an address a private local Ray instance is started
(no dashboard, no usage reporting) and shut down afterwards; with `--ray-address` the same code runs on a
cluster, where each device actor asks Ray for one GPU (cuda) or one NPU.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from pathlib import Path
from typing import Any

from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.drivers.batch_case import (
    BatchCase,
    Hooks,
    Row,
    case_dir,
    failed_row,
    repair_case,
    started_row,
)

MAX_TRIES = 2  # the first try and one retry after a lost worker
PID_FILE = "worker.pid"


class RepairWorker:
    """The actor body: a process that keeps its evaluator (and so its sandbox workers) warm between cases."""

    def __init__(self, config: dict[str, Any], out: str, html: bool) -> None:
        self.config = RepairConfig.from_dict(config)
        self.out = Path(out)
        self.html = html

    def pid(self) -> int:
        return os.getpid()

    def repair(self, case: BatchCase, tries: int) -> Row:
        folder = case_dir(self.out, case)
        folder.mkdir(parents=True, exist_ok=True)
        # Which process holds which case, for operators (and the lost-worker test) to see.
        pid_file = folder / PID_FILE
        pid_file.write_text(f"{os.getpid()} {tries}\n")
        try:
            return repair_case(
                case, self.config, self.out, html=self.html, worker=f"ray:{os.getpid()}", tries=tries
            )
        finally:
            # Only while the case runs: a stale file would name a process that has moved on to another case.
            pid_file.unlink(missing_ok=True)


def actor_options(device: str) -> dict[str, Any]:
    """Ray resources for one worker slot: a CPU, plus the accelerator a device worker occupies."""
    if device == "cuda":
        return {"num_cpus": 1, "num_gpus": 1}  # Ray spells {"GPU": 1} as num_gpus
    if device == "npu":
        return {"num_cpus": 1, "resources": {"NPU": 1}}
    return {"num_cpus": 1}


def init_ray(address: str | None, workers: int) -> bool:
    """Connect to ADDRESS or start a local instance; True when this call started Ray (and must stop it)."""
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    return True


def run_ray(
    cases: list[BatchCase],
    config: RepairConfig,
    out: Path,
    workers: int,
    html: bool,
    hooks: Hooks,
    *,
    address: str | None = None,
) -> None:
    """Repair CASES on WORKERS Ray actors, reporting rows through HOOKS (on_start, on_done) as they happen."""
    # Ray's driver prints worker deaths and task errors on stdout; stdout is the batch's JSON, so send them
    # where progress goes.
    with contextlib.redirect_stdout(sys.stderr):
        _run(cases, config, out, workers, html, hooks, address)


def _run(
    cases: list[BatchCase],
    config: RepairConfig,
    out: Path,
    workers: int,
    html: bool,
    hooks: Hooks,
    address: str | None,
) -> None:
    import ray
    from ray.exceptions import RayActorError, WorkerCrashedError

    on_start, on_done = hooks
    started_here = init_ray(address, workers)
    # Each actor owns one sandbox worker: N actors hold as many evaluation workers as the local executor's N.
    actor_config = RepairConfig.from_dict({**config.to_dict(), "workers": 1}).to_dict()
    actor_class = ray.remote(max_restarts=0, max_task_retries=0, **actor_options(config.device))(RepairWorker)

    def new_actor() -> Any:
        return actor_class.remote(actor_config, str(out.resolve()), html)

    actors = [new_actor() for _ in range(min(workers, len(cases)))]
    todo: deque[tuple[BatchCase, int, float]] = deque((case, 1, 0.0) for case in cases)
    pending: dict[Any, tuple[int, BatchCase, int, float]] = {}

    def dispatch(slot: int) -> None:
        case, tries, first_start = todo.popleft()
        row = started_row(case, out, "ray", tries)
        if first_start:
            row["started_at"] = first_start
        on_start(row)
        pending[actors[slot].repair.remote(case, tries)] = (slot, case, tries, row["started_at"])

    try:
        for slot in range(len(actors)):
            if todo:
                dispatch(slot)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            slot, case, tries, started = pending.pop(ref)
            try:
                on_done(ray.get(ref))
            except (RayActorError, WorkerCrashedError) as exc:
                ray.kill(actors[slot], no_restart=True)
                actors[slot] = new_actor()  # the lost worker's slot gets a fresh, warm-on-first-use actor
                if tries < MAX_TRIES:
                    todo.appendleft((case, tries + 1, started))
                else:
                    reason = f"worker lost {tries} times: {type(exc).__name__}: {str(exc).splitlines()[0]}"
                    on_done(failed_row(case, out, reason, tries, started, "ray"))
            except ray.exceptions.RayError as exc:
                on_done(failed_row(case, out, f"{type(exc).__name__}: {exc}", tries, started, "ray"))
            if todo:
                dispatch(slot)
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if started_here:
            ray.shutdown()
