"""`kmedic bench` on a tiny corpus: figures, report files, and a rerun that redoes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from problems import SCALE_REFERENCE, UNREACHABLE_SCALE_REFERENCE, scale_candidate

KMEDIC = str(Path(sys.executable).parent / "kmedic")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "softmax_tail"


def write_case(root: Path, name: str, category: str, reference: str, candidate: str, fixed: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "reference.py").write_text(reference)
    (folder / "candidate.py").write_text(candidate)
    (folder / "fixed.py").write_text(fixed)
    (folder / "meta.toml").write_text(
        f'category = "{category}"\nbug_classes = ["operator_misread"]\nexposed_by = ["seed0"]\n'
        'lines_changed = 2\ndescription = "test case"\ntwo_bug = false\n'
    )


def test_bench_reports_rates_and_resumes(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    softmax = (EXAMPLE / "candidate.py").read_text()
    fixed_softmax = softmax.replace("other=0.0", 'other=-float("inf")').replace(
        "        n_rows, n_cols = x.shape", "        x = x.contiguous()\n        n_rows, n_cols = x.shape"
    )
    write_case(
        corpus,
        "softmax_attention_01_example",
        "softmax_attention",
        (EXAMPLE / "reference.py").read_text(),
        softmax,
        fixed_softmax,
    )
    # A wrong constant the reference hides behind a method: no offline rule can read it (stays unrepaired).
    write_case(
        corpus,
        "elementwise_01_constant",
        "elementwise",
        UNREACHABLE_SCALE_REFERENCE,
        scale_candidate(("x * 2.0", "x * 3.0")),
        scale_candidate(),
    )
    out = tmp_path / "out"
    args = [KMEDIC, "bench", str(corpus), "--workers", "2", "--out", str(out), "--max-iterations", "1"]
    first = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["cases"] == 2 and summary["pass_at_1"] == 0.5
    assert summary["categories"]["softmax_attention"]["pass_at_1"] == 1.0
    assert summary["categories"]["elementwise"]["pass_at_1"] == 0.0
    assert summary["llm_tokens_per_success"] == 0 and summary["median_diff_lines"] > 0
    for name in ("report.json", "report.md", "report.png"):
        assert (out / name).stat().st_size > 0
    assert "| softmax_attention | 1 | 1 | 100% |" in (out / "report.md").read_text()
    by_name = {o["name"]: o for o in summary["outcomes"]}
    assert by_name["softmax_attention_01_example"]["start_verdict"] == "mismatch"
    assert by_name["softmax_attention_01_example"]["final_verdict"] == "pass"
    assert by_name["elementwise_01_constant"]["final_verdict"] == "mismatch"
    assert summary["crashes"] == 0 and summary["max_wall_s"] >= summary["median_wall_s"] > 0
    assert (out / "report.png").read_bytes()[:4] == b"\x89PNG"

    records = sorted((out / "cases").glob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in records]
    again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert [p.stat().st_mtime_ns for p in sorted((out / "cases").glob("*.json"))] == stamps  # nothing redone
    assert "Pass@1: **50.0%**" in again.stdout


def test_bench_bad_corpus_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([KMEDIC, "bench", str(tmp_path / "missing")], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_debug_and_regenerate_side_by_side_with_a_scripted_llm(tmp_path: Path) -> None:
    from openai_server import ScriptedOpenAIServer

    corpus = tmp_path / "corpus"
    write_case(
        corpus,
        "elementwise_01_constant",
        "elementwise",
        SCALE_REFERENCE,
        scale_candidate(("x * 2.0", "x * 3.0")),
        scale_candidate(),
    )
    fix = (
        "<<<<<<< SEARCH\n    tl.store(out_ptr + offs, x * 3.0, mask=mask)\n=======\n"
        "    tl.store(out_ptr + offs, x * 2.0, mask=mask)\n>>>>>>> REPLACE\n"
    )
    wrong = f"```python\n{scale_candidate(('x * 2.0', 'x * 4.0'))}```"
    right = f"```python\n{scale_candidate()}```"
    script = [
        {"content": fix, "usage": (100, 20)},  # the debug run: one small edit
        {"content": wrong, "usage": (300, 400)},
        {"content": right, "usage": (300, 400)},
    ]  # regenerations
    out = tmp_path / "out"
    with ScriptedOpenAIServer(script) as server:
        proc = subprocess.run(
            [
                KMEDIC,
                "bench",
                str(corpus),
                "--strategy",
                "llm",
                "--baseline",
                "regenerate",
                "--out",
                str(out),
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": server.base_url, "KMEDIC_HOME": str(tmp_path)},
        )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["pass_at_1"] == 1.0 and summary["llm_tokens_per_success"] == 120
    regen = summary["regenerate"]
    assert (regen["pass_at_1"], regen["pass_at_3"], regen["llm_tokens_per_success"]) == (0.0, 1.0, 1400)
    assert "Regenerate baseline" in (out / "report.md").read_text()
