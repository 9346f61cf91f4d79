"""A KernelBench generation run (problem files + `level_L_problem_P_sample_S_kernel.py`) runs as a batch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_medic.graph.drivers.batch import read_rows
from kernel_medic.graph.drivers.import_kernelbench import category_of, import_kernelbench
from kernel_medic.tools.evaluation.corpus import load_corpus
from problems import SCALE_CANDIDATE, SCALE_REFERENCE, scale_candidate


def kernelbench_layout(root: Path) -> tuple[Path, Path]:
    """KernelBench's folders: KernelBench/level1/<P>_<Name>.py and runs/<run>/level_1_problem_<P>_...py."""
    problems, run = root / "KernelBench", root / "runs" / "my_run"
    (problems / "level1").mkdir(parents=True)
    run.mkdir(parents=True)
    (problems / "level1" / "7_Scale_by_two.py").write_text(SCALE_REFERENCE)
    (run / "level_1_problem_7_sample_0_kernel.py").write_text(SCALE_CANDIDATE)
    grid = scale_candidate(("triton.cdiv(n, 256)", "n // 256"))  # a grid one block short: a near-miss
    (run / "level_1_problem_7_sample_1_kernel.py").write_text(grid)
    (run / "level_1_problem_9_sample_0_kernel.py").write_text(SCALE_CANDIDATE)  # its problem is missing
    (run / "eval_results.json").write_text("{}")  # KernelBench's own files beside the kernels are ignored
    return problems, run


def test_import_writes_one_imported_case_per_kernel_and_names_what_it_skipped(tmp_path: Path) -> None:
    problems, run = kernelbench_layout(tmp_path)
    result = import_kernelbench(run, problems, tmp_path / "out")
    assert [p.name for p in result.problems] == ["level1_7_Scale_by_two_s0", "level1_7_Scale_by_two_s1"]
    assert result.skipped == [
        ("level_1_problem_9_sample_0_kernel.py", f"no problem 9 of level 1 under {problems}")
    ]
    case = result.problems[1]
    assert (case / "reference.py").read_text() == SCALE_REFERENCE
    assert "n // 256" in (case / "candidate.py").read_text()
    cases = load_corpus(tmp_path / "out")  # what `kmedic bench` reads: imported cases need no fixed.py
    assert [c.imported for c in cases] == [True, True]
    assert "sample 1" in cases[1].description
    with pytest.raises(ValueError, match="not a KernelBench run"):
        import_kernelbench(problems, problems, tmp_path / "x")


def test_category_comes_from_the_problem_name() -> None:
    assert category_of("23_Softmax") == "softmax_attention"
    assert category_of("40_LayerNorm") == "normalization"
    assert category_of("1_Square_matrix_multiplication_") == "matmul"
    assert category_of("99_Something_else") == "other"


def run_kmedic(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernel_medic.graph.drivers.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_batch_repairs_a_kernelbench_run_folder(tmp_path: Path) -> None:
    problems, run = kernelbench_layout(tmp_path)
    (run / "level_1_problem_9_sample_0_kernel.py").unlink()
    out = tmp_path / "batch"
    done = run_kmedic(
        "batch", str(run), "--problems", str(problems), "--out", str(out), "--max-iterations", "2",
        "--workers", "2", "--no-html", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "imported 2 kernels of my_run" in done.stderr
    summary = json.loads(done.stdout)
    assert {row["name"]: row["status"] for row in summary["cases"]} == {
        "level1_7_Scale_by_two_s0": "repaired",
        "level1_7_Scale_by_two_s1": "repaired",
    }
    diffs = {row["name"]: row["diff"] for row in read_rows(out)}
    assert "cdiv" in diffs["level1_7_Scale_by_two_s1"]


def test_a_run_folder_without_its_problems_is_bad_input(tmp_path: Path) -> None:
    _, run = kernelbench_layout(tmp_path)
    done = run_kmedic("batch", str(run), "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"kmedic: {run}: a KernelBench run needs --problems DIR (KernelBench/KernelBench)"
    ]
    done = run_kmedic("bench", str(tmp_path / "nothing.jsonl"), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "no such file or folder" in done.stderr
    jsonl = Path(__file__).parent / "fixtures" / "tritonbench" / "generations.jsonl"
    done = run_kmedic("batch", str(jsonl), "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"kmedic: {jsonl}: a JSONL input needs --references DIR (the reference problems)"
    ]
