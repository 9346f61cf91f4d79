"""TritonBench importer and corpus builder on a fixture we wrote, and the committed manifests on the snapshot.

The fixture (tests/fixtures/tritonbench/) is our own code: one operator `scale_add`, a JSONL of five
generations (correct, near-miss ignoring `alpha`, crash from CUDA demo code at import, a refusal without a
kernel, a duplicate) and a fake mini snapshot that the builder test commits to a throw-away git repo.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_medic.graph.drivers.import_tritonbench import (
    WRAPPER_MARK,
    extract_code,
    import_tritonbench,
    load_references,
)
from kernel_medic.tools.evaluation.corpus import load_corpus
from kernel_medic.tools.evaluation.problem import load_problem

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "tritonbench"
TRITONBENCH = REPO / "benchmarks" / "tritonbench"
SNAPSHOT = Path("/work/.mirror/thunlp+TritonBench/repo")
sys.path.insert(0, str(TRITONBENCH))

import build  # noqa: E402
import derive_specs  # noqa: E402


def test_extract_code_keeps_python_fences_and_drops_other_languages() -> None:
    text = "Intro\n```python\na = 1\n```\nprose\n```bash\npip install x\n```\n```\nb = 2\n```\n"
    assert extract_code(text) == "a = 1\n\nb = 2\n"
    assert extract_code("import torch\nx = 1\n") == "import torch\nx = 1\n"  # no fences: all of it
    assert extract_code("```cpp\nint x;\n```") == ""


def test_import_writes_one_problem_per_distinct_kernel_and_they_judge_as_expected(
    tmp_path: Path, evaluator: object
) -> None:
    folders = import_tritonbench(FIXTURE / "generations.jsonl", FIXTURE / "references", tmp_path)
    assert [f.name for f in folders] == [
        "generations_r0000_scale_add",
        "generations_r0001_scale_add",
        "generations_r0002_scale_add",
    ]
    summary = json.loads((tmp_path / "import.json").read_text())
    assert [(s["record"], s["reason"]) for s in summary["skipped"]] == [
        (3, "no @triton.jit kernel"),  # a refusal, mapped by the prompt's entry line
        (4, "same code as an earlier record"),  # mapped by its def (no entry line in the prompt)
    ]
    candidate = (folders[0] / "candidate.py").read_text()
    assert "pip install" not in candidate and WRAPPER_MARK in candidate
    assert candidate.rstrip().endswith("return scale_add(x0, x1, alpha=0.5)")
    verdicts = [evaluator.evaluate(load_problem(f), tier="light").verdict for f in folders]  # type: ignore[attr-defined]
    assert verdicts[0] == "pass"
    assert verdicts[1] == "mismatch"
    assert verdicts[2] in ("compile_error", "runtime_error")  # `.cuda()` at import on a CPU machine
    # `kmedic bench x.jsonl --references R` reads the import as a corpus of imported cases (no fixed.py).
    cases = load_corpus(tmp_path)
    assert [(c.imported, c.looked_at) for c in cases] == [(True, False)] * 3
    assert "record 1" in cases[1].description


def test_import_rejects_bad_input_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"predict": "x"}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not JSON"):
        import_tritonbench(bad, FIXTURE / "references", tmp_path / "out")
    bad.write_text('{"code": "x"}\n')
    with pytest.raises(ValueError, match="no string field 'predict'"):
        import_tritonbench(bad, FIXTURE / "references", tmp_path / "out")
    with pytest.raises(ValueError, match="no <op>/reference.py"):
        load_references(tmp_path)
    (tmp_path / "refs" / "op").mkdir(parents=True)
    (tmp_path / "refs" / "op" / "reference.py").write_text(
        "class Model:\n    def forward(self, x):\n        return x\n"
    )
    with pytest.raises(ValueError, match="calls no module-level function"):
        load_references(tmp_path / "refs")


def _fake_snapshot(root: Path) -> Path:
    shutil.copytree(FIXTURE / "snapshot", root)
    gen = root / "LLM_generated" / "Bench_T_coder_specific"
    gen.mkdir(parents=True)
    shutil.copy(FIXTURE / "generations.jsonl", gen / "fixture_model.jsonl")
    gen_g = root / "LLM_generated" / "Bench_G_coder_specofic"
    gen_g.mkdir(parents=True)
    shutil.copy(FIXTURE / "generations_g.jsonl", gen_g / "fixture_g.jsonl")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)
    return root


def test_builder_derives_a_reference_from_the_test_code_and_writes_the_cases(
    tmp_path: Path, evaluator: object
) -> None:
    snapshot = _fake_snapshot(tmp_path / "snap")
    spec = derive_specs.derive(snapshot, "scale_add", "scale_add", sys.executable, 120)
    # The larger of the test's two calls, its tensors described, alpha kept as a constant.
    assert [a["shape"] for a in spec["args"]] == [[4, 37], [4, 37]]
    assert spec["kwargs"] == {"alpha": {"t": "const", "repr": "0.5"}}
    assert spec["args"][1]["min"] >= 0  # torch.rand: the generated inputs stay non-negative
    assert derive_specs.validate(snapshot, "scale_add", spec, sys.executable, 120) is None
    spec["name"] = "scale_add"
    specs = tmp_path / "specs.json"
    specs.write_text(json.dumps({"scale_add": spec}))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = [("pass", 0, "pass"), ("mismatch", 1, "mismatch"), ("compile_error", 2, "compile_error: api")]
    manifest = 'snapshot_commit = "x"\n'
    for verdict, record, error_class in rows:
        manifest += (
            f'\n[[case]]\nid = "tb_scale_add_r{record}"\nfile = "LLM_generated/Bench_T_coder_specific/'
            f'fixture_model.jsonl"\nrecord = {record}\nmodel = "fixture_model"\nop = "scale_add"\n'
            f'verdict = "{verdict}"\nerror_class = "{error_class}"\nlooked_at_for_rules = false\n'
        )
    (corpus / "manifest.toml").write_text(manifest)
    with pytest.raises(ValueError, match="not the pinned"):
        build.build(snapshot, corpus, specs_path=specs)
    folders = build.build(snapshot, corpus, allow_commit=True, specs_path=specs)
    cases = load_corpus(corpus)
    assert (
        [c.name for c in cases]
        == [f.name for f in folders]
        == ["tb_scale_add_r0", "tb_scale_add_r1", "tb_scale_add_r2"]
    )
    assert all(c.imported and not c.looked_at for c in cases)
    meta = (folders[1] / "meta.toml").read_text()
    assert 'model = "fixture_model"' in meta and "record = 1" in meta and 'op = "scale_add"' in meta
    reference = (folders[0] / "reference.py").read_text()
    assert "SIZE0 = 4" in reference and "SIZE1 = 37" in reference and "alpha=0.5" in reference
    verdicts = [evaluator.evaluate(load_problem(f), tier="light").verdict for f in folders]  # type: ignore[attr-defined]
    assert verdicts[:2] == ["pass", "mismatch"]
    assert verdicts[2] in ("compile_error", "runtime_error")


def test_builder_takes_a_tritonbench_g_operator_as_reference_on_the_cpu(
    tmp_path: Path, evaluator: object
) -> None:
    snapshot = _fake_snapshot(tmp_path / "snap")
    spec = derive_specs.derive(snapshot, "shift_op", "shift_op", sys.executable, 120, bench="G")
    assert spec["function"] == "shift_op"  # the function the test calls, found by recording them all
    assert [a.get("shape") for a in spec["args"]] == [[3, 50], None]
    assert derive_specs.validate(snapshot, "shift_op", spec, sys.executable, 120, bench="G") is None
    spec.update(name="shift_op", bench="G", op="shift_op", data_file="data/TritonBench_G_v1/shift_op.py")
    specs = tmp_path / "specs.json"
    specs.write_text(json.dumps({"G:shift_op": spec}))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "manifest.toml").write_text(
        '[[case]]\nid = "tb_shift_op_fixture_g_r0000"\n'
        'file = "LLM_generated/Bench_G_coder_specofic/fixture_g.jsonl"\n'
        'record = 0\nmodel = "fixture_g"\nop = "shift_op"\nverdict = "mismatch"\nerror_class = "mismatch"\n'
        "looked_at_for_rules = false\n"
    )
    (folder,) = build.build(snapshot, corpus, allow_commit=True, specs_path=specs)
    reference = (folder / "reference.py").read_text()
    assert "assert x.is_cpu" in reference and "@triton.jit" in reference  # the operator itself, on the CPU
    report = evaluator.evaluate(load_problem(folder), tier="light")  # type: ignore[attr-defined]
    assert report.verdict == "mismatch"  # the generation ignores `shift`


@pytest.mark.skipif(not SNAPSHOT.is_dir(), reason="no local TritonBench snapshot")
@pytest.mark.parametrize(("corpus", "minimum"), [("crashes", 40), ("crashes_g", 40), ("realworld", 30)])
def test_committed_manifest_builds_from_the_snapshot(tmp_path: Path, corpus: str, minimum: int) -> None:
    target = tmp_path / corpus
    target.mkdir()
    shutil.copy(REPO / "benchmarks" / corpus / "manifest.toml", target / "manifest.toml")
    folders = build.build(SNAPSHOT, target)
    cases = load_corpus(target)
    assert len(cases) == len(folders) >= minimum
    if corpus == "realworld":  # near-misses run, so their candidates parse (a crash's may not)
        for folder in folders:
            load_problem(folder)


def test_builder_ties_an_index_range_to_the_axis_it_indexes() -> None:
    inputs = build._Inputs()
    source = inputs.tensor({"t": "tensor", "shape": [10, 512], "dtype": "float32", "min": -3.0, "max": 3.0})
    index = inputs.tensor({"t": "tensor", "shape": [10], "dtype": "int64", "min": 0.0, "max": 9.0})
    labels = inputs.tensor({"t": "tensor", "shape": [10], "dtype": "int64", "min": 0.0, "max": 3.0})
    assert (source, index, labels) == ("x0", "x1", "x2")
    # Indices over all 10 rows shrink with SIZE0 when a smaller shape is derived; four labels stay four.
    assert inputs.exprs[1] == "torch.randint(0, SIZE0, (SIZE0,), dtype=torch.int64)"
    assert inputs.exprs[2] == "torch.randint(0, 4, (SIZE0,), dtype=torch.int64)"
