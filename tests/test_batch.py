"""`kmedic batch`: a real batch is SIGKILLed mid-way and resumed; nothing finished is lost or redone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernel_medic.graph.drivers.batch import FINISHED, discover, read_rows
from kernel_medic.graph.drivers.cli_batch import main
from kernel_medic.tools.trace import read_trace
from problems import (
    LIGHT_TOML,
    SCALE_CANDIDATE,
    SCALE_REFERENCE,
    UNREACHABLE_SCALE_REFERENCE,
    scale_candidate,
    write_problem,
)

VARIANTS = {
    "ok": (SCALE_CANDIDATE, SCALE_REFERENCE, "repaired"),
    # A wrong constant the reference hides behind a method: no offline rule can read the right one.
    "wrong": (scale_candidate(("x * 2.0", "x * 3.0")), UNREACHABLE_SCALE_REFERENCE, "unrepaired"),
    "le": (scale_candidate(("offs < n", "offs <= n")), SCALE_REFERENCE, "repaired"),
    "grid": (scale_candidate(("triton.cdiv(n, 256)", "n // 256")), SCALE_REFERENCE, "repaired"),
}
KINDS = ["ok", "wrong", "ok", "le", "wrong", "ok", "grid", "ok", "wrong", "ok", "le"]


def make_batch(root: Path) -> dict[str, str]:
    """Eleven small problems in nested folders; returns case name -> expected status."""
    expected = {}
    for i, kind in enumerate(KINDS):
        name = f"group{i % 2}/{kind}_{i:02d}"
        candidate, reference, status = VARIANTS[kind]
        write_problem(root / name, candidate, reference, toml=LIGHT_TOML)
        expected[name] = status
    return expected


def batch_command(root: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "kernel_medic.graph.drivers.cli_batch", str(root), "--out", str(out),
        "--workers", "2", "--max-iterations", "2", "--no-html", *extra,
    ]  # fmt: skip


def finished(out: Path) -> dict[str, dict]:
    return {row["name"]: row for row in read_rows(out) if row["status"] in FINISHED}


def test_killed_batch_resumes_without_losing_or_repeating_a_case(tmp_path: Path) -> None:
    root, out = tmp_path / "problems", tmp_path / "out"
    expected = make_batch(root)
    # The "wrong" cases search until a budget ends them: a short wall budget keeps that to seconds.
    env = {**os.environ, "KMEDIC_HOME": str(tmp_path / "home"), "KMEDIC_WALL_BUDGET_S": "40"}
    proc = subprocess.Popen(
        batch_command(root, out), env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 150
    while len(finished(out)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "the batch ended before it could be killed mid-way"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = finished(out)
    assert 3 <= len(before) < len(expected)
    traces_before = {name: Path(row["trace_path"]).stat().st_mtime_ns for name, row in before.items()}

    rerun = subprocess.run(
        batch_command(root, out, "--json"), env=env, capture_output=True, text=True, timeout=180
    )
    assert rerun.returncode == 1, rerun.stderr  # the "wrong" cases stay unrepaired
    summary = json.loads(rerun.stdout)
    assert summary["skipped"] == len(before)
    assert summary["ran"] == len(expected) - len(before)
    assert f"{len(expected)}/{len(expected)}" in rerun.stderr and "ETA" in rerun.stderr

    rows = read_rows(out)
    assert sorted(row["name"] for row in rows) == sorted(expected)  # every case, exactly once
    by_name = {row["name"]: row for row in rows}
    assert {name: row["status"] for name, row in by_name.items()} == expected
    for name, row in before.items():  # finished before the kill: untouched by the rerun
        assert by_name[name] == row
        assert Path(row["trace_path"]).stat().st_mtime_ns == traces_before[name]
    for row in rows:  # and no case was repaired twice: one run per trace (a resumed run continues its own)
        events = read_trace(row["trace_path"])
        assert sum(e["event"] == "run_end" for e in events) == 1, row["name"]
        assert row["finished_at"] >= row["started_at"] > 0


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "no problem folders" in capsys.readouterr().err
    write_problem(tmp_path / "one", SCALE_CANDIDATE)
    assert main([str(tmp_path / "one"), "--workers", "0", "--out", str(tmp_path / "out")]) == 2
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "one"), "--executor", "spark"])
    assert exit_info.value.code == 2


def test_discover_finds_nested_problem_folders(tmp_path: Path) -> None:
    make_batch(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "reference.py").write_text("# a reference without a candidate is not a case\n")
    names = [case.name for case in discover(tmp_path)]
    assert names == sorted(names) and len(names) == len(KINDS)
    assert "group0/ok_00" in names and not any(n.startswith("notes") for n in names)
