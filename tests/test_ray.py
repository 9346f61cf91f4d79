"""The Ray executor on a real local Ray instance: a small batch, with worker processes killed mid-case."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernel_medic.graph.drivers.batch import read_rows
from kernel_medic.tools.trace import read_trace
from problems import LIGHT_TOML, SCALE_CANDIDATE, UNREACHABLE_SCALE_REFERENCE, scale_candidate, write_problem

pytest.importorskip("ray")
from kernel_medic.graph.drivers.ray_executor import PID_FILE, actor_options  # noqa: E402


def test_device_workers_ask_ray_for_their_accelerator() -> None:
    assert actor_options("cpu") == {"num_cpus": 1}
    assert actor_options("cuda") == {"num_cpus": 1, "num_gpus": 1}
    assert actor_options("npu") == {"num_cpus": 1, "resources": {"NPU": 1}}


def test_ray_batch_retries_a_lost_worker_once_then_fails_the_case(tmp_path: Path) -> None:
    root, out = tmp_path / "problems", tmp_path / "out"
    write_problem(root / "a_ok", SCALE_CANDIDATE, toml=LIGHT_TOML)
    write_problem(root / "b_killed_once", scale_candidate(("offs < n", "offs <= n")), toml=LIGHT_TOML)
    write_problem(root / "c_killed_always", SCALE_CANDIDATE, toml=LIGHT_TOML)
    wrong = scale_candidate(("x * 2.0", "x * 3.0"))
    write_problem(root / "d_wrong", wrong, UNREACHABLE_SCALE_REFERENCE, toml=LIGHT_TOML)
    env = {**os.environ, "KMEDIC_HOME": str(tmp_path / "home"), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    command = [
        sys.executable, "-m", "kernel_medic.graph.drivers.cli_batch", str(root), "--out", str(out),
        "--executor", "ray", "--workers", "2", "--max-iterations", "2", "--no-html", "--json",
    ]  # fmt: skip
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kills = {"b_killed_once": 1, "c_killed_always": 2}  # how many of each case's worker processes to kill
    killed: dict[str, list[int]] = {name: [] for name in kills}
    deadline = time.monotonic() + 600  # a hang guard: a loaded CI machine takes minutes
    while proc.poll() is None and time.monotonic() < deadline:
        for name, budget in kills.items():
            folder = out / "cases" / name
            try:
                pid, tries = (int(v) for v in (folder / PID_FILE).read_text().split())
            except (OSError, ValueError):
                continue
            # Mid-case: the worker has begun this try's repair (its trace exists) and is still at it.
            if (
                len(killed[name]) < budget
                and tries == len(killed[name]) + 1
                and (folder / "trace.jsonl").exists()
            ):
                os.kill(pid, signal.SIGKILL)
                killed[name].append(pid)
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    assert [len(killed[n]) for n in kills] == [1, 2], stderr[-2000:]
    assert proc.returncode == 1, stderr[-2000:]
    summary = json.loads(stdout)
    assert summary["executor"] == "ray" and summary["total"] == 4

    rows = {row["name"]: row for row in read_rows(out)}
    assert sorted(rows) == ["a_ok", "b_killed_once", "c_killed_always", "d_wrong"]
    assert rows["a_ok"]["status"] == "repaired" and rows["a_ok"]["tries"] == 1
    assert rows["d_wrong"]["status"] == "unrepaired", rows["d_wrong"]["error"]
    # Killed once: retried on a fresh worker (a different process) and repaired there.
    retried = rows["b_killed_once"]
    assert retried["status"] == "repaired" and retried["tries"] == 2, (retried.get("error"), stderr[-3000:])
    assert retried["worker"] != f"ray:{killed['b_killed_once'][0]}"
    assert sum(e["event"] == "run_end" for e in read_trace(retried["trace_path"])) == 1
    # Killed on the retry too: recorded as failed, not retried a third time.
    failed = rows["c_killed_always"]
    assert failed["status"] == "failed" and failed["tries"] == 2 and "worker lost" in failed["error"]
    for row in rows.values():
        assert row["worker"].startswith("ray")
