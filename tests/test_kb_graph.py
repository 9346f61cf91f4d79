"""The knowledge base in the repair graph (retrieve, distill) and the `kmedic kb` commands."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kernel_medic.graph.api import repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.graph.drivers import cli_kb
from kernel_medic.nodes.retrieve import retrieve
from kernel_medic.vectordb.pattern import load_seeds
from kernel_medic.vectordb.store import KnowledgeBase

REPO = Path(__file__).resolve().parents[1]
SEEDS = {p.id: p for p in load_seeds()}


def _retrieved_ids(trace_path: str) -> list[list[str]]:
    events = [json.loads(line) for line in Path(trace_path).read_text().splitlines() if line.strip()]
    return [
        e["delta"]["pattern_ids"]
        for e in events
        if e.get("event") == "node_end" and e.get("node") == "retrieve"
    ]


def test_retrieve_puts_pattern_rules_first_then_hypothesis_rules(tmp_path: Path) -> None:
    seed = SEEDS["reduction-max-other-zero"]
    state: dict[str, Any] = {
        "config": {"kb_path": str(tmp_path / "kb")},
        "reference_source": seed.reference,
        "best_source": seed.example_before,
        "best_report": {
            "cases": [
                {
                    "name": "seed0",
                    "verdict": "mismatch",
                    "pattern": "everywhere",
                    "relationships": ["zero_region"],
                }
            ]
        },
        "diagnosis": [
            {
                "bug_class": "tail_mask",
                "confidence": 0.5,
                "evidence": ["everywhere"],
                "rules": ["store_mask"],
            },
            {
                "bug_class": "neutral_element",
                "confidence": 0.4,
                "evidence": [],
                "rules": ["neutral_other_max"],
            },
        ],
    }
    out = retrieve(state)
    assert out["pattern_ids"][0] == "reduction-max-other-zero"
    assert out["patterns"][0]["fix"] == seed.fix
    # The retrieval score travels with the pattern so the LLM prompt can apply its relevance threshold.
    assert set(out["patterns"][0]) == {"id", "title", "bug_class", "fix", "score", "changes"}
    assert out["patterns"][0]["changes"] == seed.changes()
    assert out["rule_ids"][0] == "neutral_other_max"
    assert "store_mask" in out["rule_ids"]
    kb = KnowledgeBase(tmp_path / "kb")
    got = kb.get("reduction-max-other-zero")
    assert got is not None and got.times_retrieved == 1


def test_a_distilled_repair_is_retrieved_first_for_a_near_identical_case(tmp_path: Path) -> None:
    kb_path = tmp_path / "kb"
    config = RepairConfig.from_env(kb_path=str(kb_path), workers=2)
    first = tmp_path / "first"
    shutil.copytree(REPO / "examples" / "softmax_tail", first)
    result = repair(first, config=config, trace=tmp_path / "first.jsonl")
    assert result.status == "repaired", result.stop_reason
    assert result.distilled["kb_action"] == "added"
    pattern_id = result.distilled["kb_id"]
    stored = KnowledgeBase(kb_path).get(pattern_id)
    assert stored is not None
    assert stored.provenance.startswith("distilled from")
    assert stored.symptoms and stored.categories == ["softmax_attention"]
    assert stored.example_before != stored.example_after

    # The same slip in a lightly edited kernel: the distilled pattern should lead the retrieval.
    second = tmp_path / "second"
    shutil.copytree(first, second)
    candidate = (second / "candidate.py").read_text()
    (second / "candidate.py").write_text(candidate.replace("num", "numer").replace("den", "denom"))
    again = repair(second, config=config, trace=tmp_path / "second.jsonl")
    assert again.status == "repaired", again.stop_reason
    assert _retrieved_ids(again.trace_path)[0][0] == pattern_id
    # Near-identical fix: merged into the first pattern, not stored twice.
    assert again.distilled["kb_id"] == pattern_id
    assert again.distilled["kb_action"] == "merged"
    kb = KnowledgeBase(kb_path)
    merged = kb.get(pattern_id)
    assert merged is not None and merged.times_accepted == 2
    assert kb.stats()["distilled"] == 1


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="kmedic")
    cli_kb.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.run(args)
    return code, capsys.readouterr().out


def test_kb_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = ["--kb", str(tmp_path / "kb")]
    code, out = _cli(["kb", "stats", "--json", *kb], capsys)
    stats = json.loads(out)
    assert code == 0 and stats["patterns"] == len(SEEDS)
    assert stats["categories"]["matmul"] == sum("matmul" in p.categories for p in SEEDS.values())

    new = {
        "id": "user-pattern",
        "title": "Embedding lookup reads the wrong row for int32 indices",
        "categories": ["scan_index"],
        "bug_class": "strides_layout",
        "symptoms": ["rows_permuted"],
        "explanation": "x",
        "fix": "y",
    }
    (tmp_path / "p.json").write_text(json.dumps(new))
    assert _cli(["kb", "add", str(tmp_path / "p.json"), *kb], capsys)[0] == 0
    code, out = _cli(["kb", "show", "user-pattern", "--json", *kb], capsys)
    assert json.loads(out)["title"] == new["title"]
    code, out = _cli(
        ["kb", "search", "embedding row lookup wrong", "--symptoms", "rows_permuted", "--json", *kb], capsys
    )
    assert json.loads(out)[0]["id"] == "user-pattern"
    code, out = _cli(["kb", "list", "--category", "pooling", *kb], capsys)
    assert "maxpool-padding-zero" in out and "user-pattern" not in out

    assert _cli(["kb", "export", str(tmp_path / "all.json"), *kb], capsys)[0] == 0
    other = ["--kb", str(tmp_path / "kb2")]
    assert _cli(["kb", "import", str(tmp_path / "all.json"), *other], capsys)[0] == 0
    code, out = _cli(["kb", "stats", "--json", *other], capsys)
    assert json.loads(out)["patterns"] == len(SEEDS) + 1

    from kernel_medic.tools.evaluation.problem import InvalidProblem

    with pytest.raises(InvalidProblem, match="no pattern"):
        _cli(["kb", "show", "nope", *kb], capsys)
    (tmp_path / "bad.json").write_text(json.dumps({"id": "x"}))
    with pytest.raises(InvalidProblem, match="missing field"):
        _cli(["kb", "add", str(tmp_path / "bad.json"), *kb], capsys)
