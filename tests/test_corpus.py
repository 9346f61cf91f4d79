"""The near-miss corpora: every candidate runs and fails validation, every fix passes the full tier.

Ten corpora share the format: benchmarks/near_miss (the main corpus), benchmarks/holdout (held-out cases
written after the repair rules, to measure how the engine generalises), benchmarks/holdout2 (a second
held-out corpus, written after the third round of rules), benchmarks/holdout3 to benchmarks/holdout9
(written in rounds 33 to 37, 44, 46 and 47 in the style of real LLM near-misses, by writers who had not read
the rules).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from kernel_medic.tools.evaluation.cases import VALUE_VARIANTS
from kernel_medic.tools.evaluation.corpus import CATEGORIES, CorpusCase, load_case, load_corpus
from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.repair.edits import diff_stats

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
CORPUS = BENCHMARKS / "near_miss"
HOLDOUT = BENCHMARKS / "holdout"
HOLDOUT2 = BENCHMARKS / "holdout2"
HOLDOUT3 = BENCHMARKS / "holdout3"
HOLDOUT4 = BENCHMARKS / "holdout4"
HOLDOUT5 = BENCHMARKS / "holdout5"
HOLDOUT6 = BENCHMARKS / "holdout6"
HOLDOUT7 = BENCHMARKS / "holdout7"
HOLDOUT8 = BENCHMARKS / "holdout8"
HOLDOUT9 = BENCHMARKS / "holdout9"
CORPORA = (CORPUS, HOLDOUT, HOLDOUT2, HOLDOUT3, HOLDOUT4, HOLDOUT5, HOLDOUT6, HOLDOUT7, HOLDOUT8, HOLDOUT9)
NEAR_MISS_VERDICTS = {"mismatch", "shape_mismatch", "dtype_mismatch"}
CASE_VERDICTS = NEAR_MISS_VERDICTS | {"pass"}
# Names the evaluator gives its full-tier cases; meta's exposed_by may name a family ("shape") or one case.
CASE_FAMILIES = ("seed", *VALUE_VARIANTS, "shape", "noncontig")
MIN_CASES, MIN_PER_CATEGORY = 60, 5
MIN_HOLDOUT_PER_CATEGORY = 2


def _case_folders(root: Path = CORPUS) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def _all_cases() -> list[object]:
    """(root, name) for every case of every corpus; test ids read `<corpus>/<case>` (`holdout2/<case>`)."""
    return [
        pytest.param(root, name, id=f"{root.name}/{name}")
        for root in CORPORA
        for name in _case_folders(root)
    ]


def _exposes(entry: str, failing: set[str]) -> bool:
    return any(name == entry or name.startswith(entry + "[") for name in failing)


@pytest.mark.parametrize(("root", "name"), _all_cases())
def test_case_metadata_matches_its_files(root: Path, name: str) -> None:
    case = load_case(root / name)
    candidate = (case.path / "candidate.py").read_text(encoding="utf-8")
    fixed = (case.path / "fixed.py").read_text(encoding="utf-8")
    assert diff_stats(candidate, fixed)["changed_lines"] == case.lines_changed
    for entry in case.exposed_by:
        assert entry.startswith(CASE_FAMILIES), f"{name}: exposed_by names no evaluation case: {entry!r}"


@pytest.mark.parametrize(("root", "name"), _all_cases())
def test_candidate_is_a_near_miss_and_fixed_passes_the_full_tier(
    root: Path, name: str, evaluator: Evaluator
) -> None:
    case = load_case(root / name)
    problem = load_problem(case.path)

    report = evaluator.evaluate(problem, tier="full")
    verdicts = {c.name: c.verdict for c in report.cases}
    assert report.verdict in NEAR_MISS_VERDICTS, (report.verdict, report.symptoms[:3])
    # Never a crash, timeout or error on any case: near-misses run to completion everywhere.
    assert set(verdicts.values()) <= CASE_VERDICTS, verdicts
    assert report.score < 1.0, report.symptoms[:3]
    failing = {n for n, v in verdicts.items() if v != "pass"}
    for entry in case.exposed_by:
        assert _exposes(entry, failing), f"{name}: {entry!r} does not fail; failing cases: {sorted(failing)}"

    fixed = evaluator.evaluate(problem.with_candidate((case.path / "fixed.py").read_text()), tier="full")
    assert fixed.verdict == "pass", (fixed.verdict, fixed.symptoms[:3])
    assert fixed.score == 1.0


def test_corpus_covers_every_category() -> None:
    cases: list[CorpusCase] = load_corpus(CORPUS)
    assert [c.name for c in cases] == _case_folders()
    per_category = Counter(c.category for c in cases)
    assert len(cases) >= MIN_CASES, f"{len(cases)} cases"
    thin = {cat: per_category[cat] for cat in CATEGORIES if per_category[cat] < MIN_PER_CATEGORY}
    assert not thin, f"categories below {MIN_PER_CATEGORY} cases: {thin}"
    assert sum(c.two_bug for c in cases) >= 4


def _check_held_out_corpus(root: Path) -> list[CorpusCase]:
    cases: list[CorpusCase] = load_corpus(root)
    assert [c.name for c in cases] == _case_folders(root)
    per_category = Counter(c.category for c in cases)
    thin = {cat: per_category[cat] for cat in CATEGORIES if per_category[cat] < MIN_HOLDOUT_PER_CATEGORY}
    assert not thin, f"{root.name} categories below {MIN_HOLDOUT_PER_CATEGORY} cases: {thin}"
    assert sum(c.two_bug for c in cases) >= 3
    return cases


def test_holdout_covers_every_category() -> None:
    # The first held-out corpus was measured once, then its failures were read for round-4 rules (marked).
    _check_held_out_corpus(HOLDOUT)


def test_holdout2_covers_every_category() -> None:
    cases = _check_held_out_corpus(HOLDOUT2)
    # The current held-out corpus measures generalisation: none of it was read while writing repair rules.
    assert not [c.name for c in cases if c.looked_at]


def test_holdout3_covers_every_category() -> None:
    # Written like real LLM near-misses; after its first measurement, the cases read are marked in meta.toml.
    cases = _check_held_out_corpus(HOLDOUT3)
    assert len(cases) >= 20


def test_holdout4_covers_every_category() -> None:
    # Written in round 34 like holdout3, measured blind before any of it was read.
    cases = _check_held_out_corpus(HOLDOUT4)
    assert len(cases) >= 20


def test_holdout5_covers_every_category() -> None:
    # Written in round 35 like holdout4, measured blind before any of it was read.
    cases = _check_held_out_corpus(HOLDOUT5)
    assert len(cases) >= 20


def test_holdout6_covers_every_category() -> None:
    # Written in round 37, half KernelBook-style modules and half TritonBench-style functional operators.
    cases = _check_held_out_corpus(HOLDOUT6)
    assert len(cases) >= 20


def test_holdout7_covers_every_category() -> None:
    # Written in round 44 like holdout6: TritonBench-style operators with non-default keyword arguments.
    cases = _check_held_out_corpus(HOLDOUT7)
    assert len(cases) >= 20


def test_holdout8_covers_every_category() -> None:
    # Written in round 46: KernelBench level-2 style fused modules (a heavy op, then a chain of small ones).
    cases = _check_held_out_corpus(HOLDOUT8)
    assert len(cases) >= 20


def test_holdout9_covers_every_category() -> None:
    # Written in round 47: operators with keyword arguments, every numerical step in Triton (torch only for
    # allocation, views and shapes), three two-bug cases per writer.
    cases = _check_held_out_corpus(HOLDOUT9)
    assert len(cases) >= 20


def test_load_corpus_names_the_folder_of_a_malformed_case(tmp_path: Path) -> None:
    good = tmp_path / "activation_01_ok"
    good.mkdir()
    for file in ("reference.py", "candidate.py", "fixed.py"):
        (good / file).write_text("")
    (good / "meta.toml").write_text(
        'category = "activation"\nbug_classes = ["tail_mask"]\nexposed_by = ["seed0"]\n'
        'lines_changed = 2\ndescription = "x"\ntwo_bug = false\n'
    )
    (tmp_path / "__pycache__").mkdir()
    assert [c.name for c in load_corpus(tmp_path)] == ["activation_01_ok"]
    assert load_corpus(tmp_path)[0].bug_classes == ("tail_mask",)

    bad = tmp_path / "loss_01_bad"
    bad.mkdir()
    for file in ("reference.py", "candidate.py", "fixed.py"):
        (bad / file).write_text("")
    (bad / "meta.toml").write_text('category = "loss"\nlines_changed = "two"\n')
    with pytest.raises(ValueError, match="loss_01_bad"):
        load_corpus(tmp_path)
    (bad / "meta.toml").unlink()
    with pytest.raises(ValueError, match=r"loss_01_bad: missing meta\.toml"):
        load_corpus(tmp_path)


def test_an_imported_case_needs_no_fix_and_keeps_its_source(tmp_path: Path) -> None:
    # Generations taken from someone else's run (benchmarks/realworld, crashes, imports) have no fixed.py.
    case = tmp_path / "tb_softmax_qwen_17"
    case.mkdir()
    for file in ("reference.py", "candidate.py"):
        (case / file).write_text("")
    (case / "meta.toml").write_text(
        'category = "other"\ndescription = "softmax from qwen.jsonl record 17"\nlooked_at_for_rules = false\n'
        '[source]\nrepo = "thunlp/TritonBench"\nrecord = 17\n'
    )
    [loaded] = load_corpus(tmp_path)
    assert loaded.imported and loaded.category == "other" and not loaded.looked_at
    (case / "meta.toml").write_text('category = "other"\n[source]\nrepo = "x"\n')
    with pytest.raises(ValueError, match=r"tb_softmax_qwen_17: meta\.toml: missing key\(s\) description"):
        load_corpus(tmp_path)
    # Without a [source] table the near-miss rules apply: the missing fix is an error.
    (case / "meta.toml").write_text('category = "other"\ndescription = "x"\n')
    with pytest.raises(ValueError, match="missing fixed.py"):
        load_corpus(tmp_path)
