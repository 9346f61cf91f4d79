"""The device check: a corpus judged on one device, its verdicts compared with another device's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "device_check.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


def test_a_corpus_judged_and_compared_with_a_baseline(tmp_path: Path) -> None:
    corpus = tmp_path / "near_miss"
    case = ROOT / "benchmarks" / "correct_negatives" / "reduction_01_row_mean_fp16_accumulator"
    shutil.copytree(case, corpus / case.name)
    repaired = tmp_path / "repaired"
    repaired.mkdir()
    # A "repair" that is the near-miss itself: the judge must not pass it on any device.
    shutil.copy(case / "candidate.py", repaired / f"{case.name}.py")
    rows = tmp_path / "rows.jsonl"
    first = _run(str(corpus), "--repaired", str(repaired), "--workers", "1", "--rows", str(rows), "--json")
    assert first.returncode == 0, first.stderr[-2000:]
    result = json.loads(first.stdout)
    assert [(r["kind"], r["verdict"], r["agrees"]) for r in result["rows"]] == [
        ("candidate", "mismatch", True),
        ("repaired", "mismatch", False),
    ]
    assert result["summary"]["unexpected"] == [f"near_miss/{case.name} repaired: mismatch"]
    assert len(rows.read_text().splitlines()) == 2  # kept as judged, for a run cut short
    baseline = tmp_path / "baseline.json"
    old = json.loads(first.stdout)
    old["rows"][0]["verdict"] = "pass"  # as if the other device had passed the candidate
    baseline.write_text(json.dumps(old))
    second = _run(str(corpus), "--workers", "1", "--baseline", str(baseline), "--json")
    assert json.loads(second.stdout)["summary"]["against_baseline"] == [
        f"near_miss/{case.name} candidate: pass -> mismatch"
    ]


def test_a_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    proc = _run(str(tmp_path / "absent"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "is not a folder" in proc.stderr
