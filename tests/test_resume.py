"""Checkpoints: a run killed with SIGKILL mid-way resumes to the same result; a trace forks from a step."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from kernel_medic.graph.api import repair, resume
from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.drivers.replay import replay
from problems import LIGHT_TOML, scale_candidate, write_problem

KMEDIC = str(Path(sys.executable).parent / "kmedic")
EXAMPLE = str(Path("examples/softmax_tail").resolve())


def kmedic(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KMEDIC, *args], capture_output=True, text=True, timeout=300)


def test_a_killed_run_resumes_to_the_same_result(tmp_path: Path) -> None:
    db, trace = str(tmp_path / "cp.sqlite"), tmp_path / "trace.jsonl"
    args = ["repair", EXAMPLE, "--thread", "killed", "--checkpoint-db", db, "--trace", str(trace), "--json"]
    proc = subprocess.Popen(
        [KMEDIC, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 300  # a loaded CI machine: the first patch node screens for a while
    # Kill once the first patch has been verified: past the baseline evaluation, before the repair is done.
    while '"node": "verify"' not in (trace.read_text() if trace.exists() else ""):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached verify"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert '"event": "run_end"' not in trace.read_text()

    resumed = kmedic("repair", "--resume", "killed", "--checkpoint-db", db, "--json")
    assert resumed.returncode == 0, resumed.stderr
    fresh = kmedic(
        "repair", EXAMPLE, "--checkpoint-db", db, "--trace", str(tmp_path / "fresh.jsonl"), "--json"
    )
    got, want = json.loads(resumed.stdout), json.loads(fresh.stdout)
    for key in ("status", "stop_reason", "score", "diff", "iterations", "integrity"):
        assert got[key] == want[key], key
    assert "[intake]" not in resumed.stderr  # it continued; it did not start over


def test_a_run_killed_at_its_first_checkpoint_resumes_from_its_saved_inputs(tmp_path: Path) -> None:
    # Killed between the first checkpoint (inputs saved, not yet applied) and the second: the state has only
    # reducer defaults, and the run must still resume rather than fail (a Ray batch retry once hit this).
    write_problem(tmp_path / "p", scale_candidate(("offs < n", "offs <= n")), toml=LIGHT_TOML)
    db = tmp_path / "cp.sqlite"
    config = RepairConfig(max_iterations=2)
    done = repair(tmp_path / "p", None, config, thread_id="t", checkpoint_db=db, trace=tmp_path / "a.jsonl")
    assert done.status == "repaired"
    with sqlite3.connect(db) as conn:  # keep only the first checkpoint, as a SIGKILL at that moment leaves
        (first,) = conn.execute("SELECT min(checkpoint_id) FROM checkpoints").fetchone()
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id != ?", (first,))
        conn.execute("DELETE FROM writes")  # nor the first step's writes: the kill came before them

    resumed = resume("t", checkpoint_db=db)
    assert (resumed.status, resumed.diff, resumed.iterations) == (done.status, done.diff, done.iterations)


def test_unknown_thread_is_bad_input(tmp_path: Path) -> None:
    proc = kmedic("repair", "--resume", "nope", "--checkpoint-db", str(tmp_path / "cp.sqlite"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "nope" in proc.stderr


def test_replay_forks_from_a_step_with_a_changed_config(tmp_path: Path) -> None:
    done = kmedic(
        "repair",
        EXAMPLE,
        "--trace",
        str(tmp_path / "t.jsonl"),
        "--checkpoint-db",
        str(tmp_path / "c"),
        "--json",
    )
    assert json.loads(done.stdout)["status"] == "repaired"
    # Fork after intake, evaluate, diagnose and retrieve, allowing a single patch: the two-bug example then
    # cannot be finished, so the fork really ran with the new setting.
    report = replay(
        tmp_path / "t.jsonl", from_step=4, changes={"max_iterations": 1}, workdir=tmp_path / "fork"
    )
    assert report.forked_at == 4
    assert report.result["status"] == "unrepaired" and report.result["stop_reason"] == "max_iterations"
    assert report.replayed["nodes"][:4] == report.recorded["nodes"][:4]
