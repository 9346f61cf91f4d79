"""The knowledge-base store: persistence across processes, concurrent readers, idempotent seeding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_medic.vectordb.features import code_features, infer_category
from kernel_medic.vectordb.pattern import Pattern, load_seeds
from kernel_medic.vectordb.store import KnowledgeBase, RetrievalQuery

PATTERN = {
    "id": "test-pattern",
    "title": "Histogram bins off by one at the right edge",
    "categories": ["scan_index"],
    "bug_class": "operator_misread",
    "symptoms": ["trailing", "shifted"],
    "explanation": "The last bin is exclusive in the reference.",
    "fix": "Clamp the index to n_bins - 1.",
}

SEED_FILE = """
category = "elementwise"

[references.r]
source = "reference"

[kernels.k]
source = "x = 1"

[[patterns]]
id = "tmp-seed"
title = "TITLE"
bug_class = "tail_mask"
symptoms = ["tail_block"]
explanation = "e"
fix = "f"
reference = "r"
after = "k"
before = [["x = 1", "x = 2"]]
"""


def _python(code: str, kb: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, str(kb)], capture_output=True, text=True, timeout=300, check=False
    )


def test_store_survives_a_process_restart(tmp_path: Path) -> None:
    kb_path = tmp_path / "kb"
    write = f"""
import sys
from kernel_medic.vectordb.store import KnowledgeBase
kb = KnowledgeBase(sys.argv[1])
kb.add({PATTERN!r})
kb.record_retrieved(["test-pattern"])
kb.record_accepted("test-pattern")
"""
    read = """
import json, sys
from kernel_medic.vectordb.store import KnowledgeBase, RetrievalQuery
kb = KnowledgeBase(sys.argv[1])
p = kb.get("test-pattern")
hits = kb.search(RetrievalQuery(text="histogram bin edge off by one", symptoms=["trailing"]), k=1)
print(json.dumps({"title": p.title, "retrieved": p.times_retrieved, "accepted": p.times_accepted,
                  "top": hits[0][0].id, "count": kb.count()}))
"""
    first = _python(write, kb_path)
    assert first.returncode == 0, first.stderr
    second = _python(read, kb_path)
    assert second.returncode == 0, second.stderr
    got = json.loads(second.stdout.strip().splitlines()[-1])
    assert got == {
        "title": PATTERN["title"],
        "retrieved": 1,
        "accepted": 1,
        "top": "test-pattern",
        "count": 1,
    }


def test_concurrent_readers_get_the_same_answers(tmp_path: Path) -> None:
    kb_path = tmp_path / "kb"
    KnowledgeBase(kb_path).ensure_seeded()
    read = """
import sys
from kernel_medic.vectordb.store import KnowledgeBase, RetrievalQuery
kb = KnowledgeBase(sys.argv[1])
for _ in range(5):
    hits = kb.search(RetrievalQuery(text="softmax NaN for large logits", symptoms=["x100"],
                                    category="softmax_attention"), k=3)
print(hits[0][0].id, kb.count())
"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", read, str(kb_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    answers = {out.strip().splitlines()[-1] for out, _ in outputs}
    assert answers == {f"softmax-no-max-subtraction {len(load_seeds())}"}


def test_a_store_open_in_this_process_finds_patterns_another_process_added(tmp_path: Path) -> None:
    # Two kmedic runs on one machine share the default store: the second one's distilled patterns must not
    # break the first one's retrieval (Chroma's in-memory index of the first did not know their ids).
    kb = KnowledgeBase(tmp_path / "kb")
    kb.add(PATTERN)
    query = RetrievalQuery(text="histogram bin edge off by one", category="scan_index")
    assert [p.id for p, _, _ in kb.search(query, k=3)] == ["test-pattern"]
    add = f"""
import sys
from kernel_medic.vectordb.store import KnowledgeBase
kb = KnowledgeBase(sys.argv[1])
for i in range(3):
    kb.add({{**{PATTERN!r}, "id": f"other-{{i}}", "title": f"Histogram bins off by one, variant {{i}}"}})
"""
    done = _python(add, tmp_path / "kb")
    assert done.returncode == 0, done.stderr
    found = {p.id for p, _, _ in kb.search(query, k=5)}
    assert found == {"test-pattern", "other-0", "other-1", "other-2"}
    assert kb.count() == 4


def test_seeding_is_idempotent_and_picks_up_changed_seed_files(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "one.toml").write_text(SEED_FILE)
    kb = KnowledgeBase(tmp_path / "kb")
    assert kb.ensure_seeded(seeds) == 1
    kb.record_accepted("tmp-seed")
    assert kb.ensure_seeded(seeds) == 0
    assert kb.count() == 1
    (seeds / "one.toml").write_text(SEED_FILE.replace("TITLE", "A better title"))
    assert kb.ensure_seeded(seeds) == 1
    p = kb.get("tmp-seed")
    assert p is not None
    assert (p.title, p.times_accepted, kb.count()) == ("A better title", 1, 1)
    assert (p.example_before, p.example_after, p.reference) == ("x = 2", "x = 1", "reference")


def test_a_seed_folder_without_seed_files_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    # An install that lost its seed files used to open a knowledge base with no patterns, silently.
    (tmp_path / "seeds").mkdir()
    with pytest.raises(ValueError, match="no seed files"):
        load_seeds(tmp_path / "seeds")
    with pytest.raises(ValueError, match="no seed files"):
        KnowledgeBase(tmp_path / "kb").ensure_seeded(tmp_path / "seeds")


def test_export_import_roundtrip_and_stats(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "a")
    kb.add(PATTERN)
    kb.add({**PATTERN, "id": "other", "categories": ["loss"], "provenance": "distilled from run-1"})
    assert kb.stats()["categories"]["scan_index"] == 1
    assert kb.stats()["distilled"] == 1
    assert kb.export(tmp_path / "out.json") == 2
    fresh = KnowledgeBase(tmp_path / "b")
    assert fresh.import_(tmp_path / "out.json") == 2
    assert [p.id for p in fresh.list()] == ["other", "test-pattern"]
    assert [p.id for p in fresh.list("loss")] == ["other"]
    assert fresh.get("missing") is None


def test_pattern_validation_names_the_problem() -> None:
    with pytest.raises(ValueError, match="unknown categor"):
        Pattern.from_dict({**PATTERN, "categories": ["teleportation"]})
    with pytest.raises(ValueError, match="missing field"):
        Pattern.from_dict({"id": "x"})


def test_search_ranks_symptom_overlap_and_filters_by_category(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "kb")
    kb.add(PATTERN)
    kb.add({**PATTERN, "id": "same-text-other-symptoms", "symptoms": ["x100"]})
    hits = kb.search(RetrievalQuery(text=PATTERN["title"], symptoms=["trailing", "shifted"]), k=2)
    assert [p.id for p, _, _ in hits] == ["test-pattern", "same-text-other-symptoms"]
    assert hits[0][1] > hits[1][1]
    assert "trailing" in hits[0][2]


def test_code_features_and_category_inference() -> None:
    source = (
        "@triton.jit\ndef k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):\n"
        "    x = tl.load(x_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < n, other=0)\n"
        "    tl.store(o_ptr, tl.max(x, axis=0) / BLOCK)\n"
        "def f(x):\n    k[(x.numel() // 128,)](x, x, 1, BLOCK=128)\n"
    )
    feats = code_features(source)
    for f in ("tl.max", "masked_load", "load_other_zero", "floordiv_grid", "constexpr_divisor"):
        assert f in feats
    ref = "class Model:\n    def forward(self, x):\n        return torch.{}(x, dim=-1)\n"
    assert infer_category(ref.format("softmax")) == "softmax_attention"
    assert infer_category(ref.format("cumsum")) == "scan_index"
    assert infer_category("class Model:\n    def forward(self, x):\n        return x * 2\n") == "elementwise"
