"""Diagnosis: static features with their lines, ranked hypotheses, LLM refinement and its fallback."""

from __future__ import annotations

import json
from typing import Any

from kernel_medic.nodes.diagnose import diagnose
from kernel_medic.tools.diagnosis.hypotheses import hypotheses, refine
from kernel_medic.tools.diagnosis.static_features import static_features
from openai_server import ScriptedOpenAIServer

KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, stride_row, stride_col, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols <= n
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=mask, other=0.0)
    m = tl.max(x, axis=0)
    acc = tl.zeros((BLOCK,), dtype=tl.float16)
    mean = tl.sum(x, axis=0) / BLOCK
    v = tl.sqrt(mean) + eps
    y = tl.exp(x - m) * 0.01
    tl.store(out_ptr + row * n + cols, y)


def launch(x, out, n):
    k[(n // 128,)](x, out, x.stride(1), x.stride(0), n, BLOCK=128)
"""


def report(*cases: tuple[str, str, str, list[str]]) -> dict[str, Any]:
    return {
        "verdict": "mismatch",
        "symptoms": ["rows wrong"],
        "cases": [{"name": n, "verdict": v, "pattern": p, "relationships": r} for n, v, p, r in cases],
    }


def test_static_features_name_their_lines() -> None:
    found = {(f.kind, f.line) for f in static_features(KERNEL)}
    assert {
        ("mask_le", 10),
        ("load_other_zero_into_max", 11),
        ("half_accumulator", 13),
        ("block_divisor", 14),
        ("sqrt_plus_eps", 15),
        ("hardcoded_constant", 16),
        ("store_without_mask", 17),
        ("grid_floor_div", 21),
        ("swapped_strides", 21),
    } <= found
    assert not any(kind == "exp_without_max" for kind, _ in found)  # there is a max


def test_static_features_of_a_clean_kernel_are_few() -> None:
    clean = KERNEL.replace("cols <= n", "cols < n").replace("y)", "y, mask=mask")
    kinds = {f.kind for f in static_features(clean)}
    assert "mask_le" not in kinds and "store_without_mask" not in kinds
    assert static_features("def broken(:\n") == []


def test_report_only_hypotheses_keep_their_shape_and_order() -> None:
    tail = report(
        ("seed0", "pass", "none", []), ("shape[n=999]", "mismatch", "tail_block", ["garbage_region"])
    )
    ranked = hypotheses(tail)
    assert ranked[0]["bug_class"] in ("tail_mask", "grid_coverage")
    assert all(set(h) == {"bug_class", "confidence", "evidence", "location", "rules"} for h in ranked)
    assert all(0 <= h["confidence"] <= 1 for h in ranked)


def test_static_features_and_probes_decide_between_report_explanations() -> None:
    rows = report(("seed0", "mismatch", "rows", []))
    source = KERNEL.replace("/ BLOCK", "/ n")
    # "rows" alone fits several classes; the masked other=0 load into tl.max points at one, with its line.
    ranked = hypotheses(rows, source)
    assert ranked[0]["bug_class"] == "neutral_element" and ranked[0]["location"] == "candidate.py:11"
    assert "neutral_other_max" in ranked[0]["rules"]
    # A probe refuting it and supporting normalisation reorders them.
    findings = [
        {"probe": "ones", "result": {"ratio": 0.78}, "supports": ["normalisation"], "refutes": []},
        {"probe": "shapes", "result": {}, "supports": [], "refutes": ["neutral_element"]},
    ]
    reranked = hypotheses(rows, source, findings)
    order = [h["bug_class"] for h in reranked]
    assert order.index("normalisation") < order.index("neutral_element")
    assert any("probe ones" in e for e in reranked[0]["evidence"])


def test_refine_reorders_and_ignores_malformed_answers() -> None:
    offline = hypotheses(report(("seed0", "mismatch", "rows", [])), KERNEL)
    answer = json.dumps([{"bug_class": "strides_layout", "confidence": 0.9, "location": "candidate.py:21"}])
    refined = refine(offline, f"Here you go:\n```json\n{answer}\n```")
    assert refined[0]["bug_class"] == "strides_layout" and refined[0]["location"] == "candidate.py:21"
    assert sorted(h["bug_class"] for h in refined) == sorted(h["bug_class"] for h in offline)
    for bad in ("no json here", '[{"bug_class": "tail_mask", "confidence": 7}]', '{"a": 1}', "[1, 2]"):
        assert refine(offline, bad) == offline


def _state(server: ScriptedOpenAIServer) -> dict[str, Any]:
    return {
        "config": {
            "strategy": "llm",
            "base_url": server.base_url,
            "model": "scripted",
            "llm_diagnosis": True,
        },
        "best_report": report(("seed0", "mismatch", "rows", [])),
        "best_source": KERNEL,
        "reference_source": "import torch\n",
        "candidate_path": "/tmp/p/candidate.py",
        "instrumentation": [],
    }


def test_llm_refines_the_diagnosis_and_its_tokens_are_counted() -> None:
    answer = json.dumps([{"bug_class": "normalisation", "confidence": 0.95, "note": "divides by BLOCK"}])
    with ScriptedOpenAIServer([{"content": answer, "usage": (900, 40)}]) as server:
        delta = diagnose(_state(server))
    assert delta["diagnosis"][0]["bug_class"] == "normalisation"
    assert "llm: divides by BLOCK" in delta["diagnosis"][0]["evidence"]
    assert (delta["llm_calls"], delta["input_tokens"], delta["output_tokens"]) == (1, 900, 40)
    prompt = server.requests[0]["messages"][0]["content"]
    assert "candidate.py" in prompt and "neutral_element" in prompt


def test_malformed_llm_answer_keeps_the_offline_ranking() -> None:
    with ScriptedOpenAIServer([{"content": "I think it is the mask.", "usage": (900, 8)}]) as server:
        state = _state(server)
        delta = diagnose(state)
    offline = hypotheses(state["best_report"], KERNEL, [], filename="candidate.py")
    assert delta["diagnosis"] == offline
    assert delta["llm_calls"] == 1 and delta["output_tokens"] == 8


def test_offline_strategy_asks_no_llm() -> None:
    with ScriptedOpenAIServer([]) as server:
        config = {"strategy": "offline", "base_url": server.base_url, "llm_diagnosis": True}
        state = {**_state(server), "config": config}
        delta = diagnose(state)
    assert server.requests == [] and "llm_calls" not in delta
    assert delta["diagnosis"][0]["location"] is not None
