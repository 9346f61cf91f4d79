"""`kmedic check` as a user runs it: a real process, real workers, exit codes and output formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from problems import SCALE_REFERENCE, scale_candidate, write_problem

REPO = Path(__file__).resolve().parents[1]
KMEDIC = str(Path(sys.executable).parent / "kmedic")


def kmedic(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KMEDIC, *args], capture_output=True, text=True, timeout=timeout)


def test_bundled_example_is_explained_as_a_mismatch() -> None:
    proc = kmedic("check", str(REPO / "examples" / "softmax_tail"), "--json", "--workers", "1")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "mismatch"
    assert 0.0 <= data["score"] < 1.0
    assert data["symptoms"]
    case_keys = {
        "name",
        "verdict",
        "max_abs_err",
        "max_rel_err",
        "mismatch_fraction",
        "nan_count",
        "inf_count",
        "pattern",
        "relationships",
    }
    assert data["cases"] and all(case_keys <= set(c) for c in data["cases"])
    assert {c["name"] for c in data["cases"]} >= {"seed0", "seed1", "x100", "noncontig"}
    assert data["wall_s"] > 0


def test_readable_report_and_progress_for_a_passing_candidate(tmp_path: Path) -> None:
    folder = write_problem(tmp_path, scale_candidate())
    proc = kmedic("check", str(folder / "reference.py"), str(folder / "candidate.py"), "--tier", "light")
    assert proc.returncode == 0, proc.stderr
    assert "PASS" in proc.stdout and "seed0" in proc.stdout
    assert "[1/1]" in proc.stderr  # progress goes to stderr, one line per case


def _bad(tmp_path: Path, *args: str) -> str:
    proc = kmedic("check", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path) -> None:
    syntax = write_problem(
        tmp_path / "syntax", scale_candidate(("def forward(self, x):", "def forward(self, x)")),
        reference=SCALE_REFERENCE + "\nrows = = 3\n",
    )
    line = _bad(tmp_path, str(syntax))
    assert "reference.py:" in line and "SyntaxError" in line
    no_model = write_problem(tmp_path / "nomodel", scale_candidate(("class ModelNew", "class Other")))
    assert "ModelNew" in _bad(tmp_path, str(no_model))
    assert "does-not-exist" in _bad(tmp_path, str(tmp_path / "does-not-exist"))
    crash = write_problem(tmp_path / "crash", scale_candidate(("import triton\n", "import triton\n1 / 0\n")))
    assert "invalid choice" in _bad(tmp_path, str(crash), "--device", "tpu")
    # A candidate that crashes at import is a failing candidate (exit 1) with its line, not bad input.
    proc = kmedic("check", str(crash), "--tier", "light", "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "compile_error" and data["crash"]["class"] == "import_error"
    assert data["crash"]["line"] == 4 and data["crash"]["code"] == "1 / 0"
    assert data["cases"][0]["crash"]["exception"] == "ZeroDivisionError"
    # So is a candidate that is not valid Python (prose left after the code): its crash names the line.
    prose = write_problem(tmp_path / "prose", scale_candidate() + "\nThe kernel doubles x.\n")
    proc = kmedic("check", str(prose), "--tier", "light", "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "compile_error" and data["crash"]["exception"] == "SyntaxError"
    assert data["crash"]["code"] == "The kernel doubles x."


def test_help_describes_the_command() -> None:
    proc = kmedic("check", "--help")
    assert proc.returncode == 0
    assert "--tier" in proc.stdout and "--json" in proc.stdout and "--device" in proc.stdout
