"""The local-model benchmark's subset: the cases run under names that do not describe their bugs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kernel_medic.tools.evaluation.corpus import load_case

ROOT = Path(__file__).resolve().parents[1]


def _llm_local():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("llm_local", ROOT / "benchmarks" / "llm_local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_subset_runs_under_names_that_do_not_describe_the_bug(tmp_path: Path) -> None:
    llm_local = _llm_local()
    corpus = ROOT / "benchmarks" / "near_miss"
    cases = llm_local.subset(corpus, 3, 2)
    names = llm_local.neutral_copy(corpus, cases, tmp_path / "corpus")
    assert list(names.values()) == cases
    for name, case in names.items():
        slug = case.split("_", 2)[-1]
        assert slug not in name and name.endswith(("_case01", "_case02"))
        copy = tmp_path / "corpus" / name
        assert (copy / "candidate.py").read_text() == (corpus / case / "candidate.py").read_text()
        assert load_case(copy).category == load_case(corpus / case).category
