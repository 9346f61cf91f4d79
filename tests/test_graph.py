"""The repair graph: its shape, its budgets, rollback, the LLM path over HTTP, the integrity door, replay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_medic.graph.api import RepairResult, repair
from kernel_medic.graph.budget import stop_reason
from kernel_medic.graph.builder import after_verify, build_graph
from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.repair.llm import render_prompt
from kernel_medic.tools.trace import read_trace, source_hash
from openai_server import ScriptedOpenAIServer
from problems import OPAQUE_SCALE_REFERENCE, scale_candidate, write_problem

KMEDIC = str(Path(sys.executable).parent / "kmedic")
NODES = {
    "intake",
    "evaluate",
    "diagnose",
    "retrieve",
    "instrument",
    "patch",
    "verify",
    "audit",
    "distill",
    "guard",
}


def edit(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def llm_config(server: ScriptedOpenAIServer, **overrides: object) -> RepairConfig:
    return RepairConfig(strategy="llm", base_url=server.base_url, model="scripted", workers=2, **overrides)


def run(folder: Path, config: RepairConfig, tmp_path: Path) -> RepairResult:
    return repair(folder, None, config, trace=tmp_path / "trace.jsonl", checkpoint_db=tmp_path / "cp.sqlite")


def test_graph_shows_every_node_and_conditional_edge() -> None:
    drawn = build_graph().get_graph()
    assert set(drawn.nodes) == NODES | {"__start__", "__end__"}
    edges = {(e.source, e.target, e.conditional) for e in drawn.edges}
    assert edges == {
        ("__start__", "intake", False),
        ("intake", "evaluate", True),
        ("intake", "__end__", True),
        ("evaluate", "audit", True),
        ("evaluate", "diagnose", True),
        ("evaluate", "__end__", True),
        ("diagnose", "retrieve", False),
        ("retrieve", "patch", False),
        ("patch", "verify", True),
        ("patch", "guard", True),
        ("verify", "audit", True),
        ("verify", "instrument", True),
        ("verify", "guard", True),
        ("instrument", "guard", False),
        ("audit", "distill", True),
        ("audit", "patch", True),
        ("audit", "__end__", True),
        ("distill", "__end__", False),
        ("guard", "diagnose", True),
        ("guard", "__end__", True),
    }
    mermaid = build_graph().get_graph().draw_mermaid()
    assert all(node in mermaid for node in NODES)


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ({"iterations": 5}, "max_iterations"),
        ({"llm_calls": 3}, "max_llm_calls"),
        ({"input_tokens": 60, "output_tokens": 41}, "max_tokens"),
        ({"wall_s": 31.0}, "wall_budget"),
        ({"no_progress": 2}, "no_progress"),
        ({"oscillation": True}, "oscillation"),
        ({"exhausted": True}, "no_applicable_patch"),
        ({"error": "llm_error: HTTP 500"}, "llm_error"),
        ({"iterations": 4, "llm_calls": 2, "no_progress": 1}, None),
    ],
)
def test_guard_stops_on_each_budget(state: dict, reason: str | None) -> None:
    config = RepairConfig(
        max_iterations=5, max_llm_calls=3, max_tokens=100, wall_budget_s=30, no_progress_limit=2
    )
    assert stop_reason(state, config) == reason  # type: ignore[arg-type]


def test_no_instrumentation_once_the_wall_budget_is_spent() -> None:
    """Probes feed a next diagnosis that a spent budget never reaches: they would only lengthen the run."""
    config = RepairConfig(wall_budget_s=30).to_dict()
    failed = {"config": config, "best_report": {"verdict": "mismatch"}}
    assert after_verify({**failed, "wall_s": 12.0}) == "instrument"  # type: ignore[typeddict-item]
    assert after_verify({**failed, "wall_s": 31.0}) == "guard"  # type: ignore[typeddict-item]
    assert after_verify({**failed, "wall_s": 12.0, "instrumentation": [{}]}) == "guard"  # type: ignore


def test_offline_cli_repairs_the_bundled_example(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            KMEDIC,
            "repair",
            str(Path("examples/softmax_tail").resolve()),
            "--strategy",
            "offline",
            "--out",
            str(out),
            "--json",
            "--checkpoint-db",
            str(tmp_path / "cp.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "repaired" and data["integrity"] == "clean" and data["score"] == 1.0
    assert data["llm_calls"] == 0 and data["tokens"]["total"] == 0
    assert 0 < data["diff_lines"] <= 6
    for key in ("stop_reason", "iterations", "wall_s"):
        assert key in data
    repaired = (out / "repaired.py").read_text()
    assert 'other=-float("inf")' in repaired
    assert json.loads((out / "report.json").read_text())["status"] == "repaired"
    assert "+    x = tl.load" in (out / "diff.patch").read_text()
    assert "[verify]" in proc.stderr and "[audit] clean" in proc.stderr  # progress per node
    # Every kernel run of the search is in the trace: what was screened, on which tier, under which limit.
    events = read_trace(out / "trace.jsonl")
    screens = [e for e in events if e["event"] == "screen"]
    tiers = {e["tier"] for e in screens if not e["tier"].startswith("case:")}  # case:NAME, one full-tier case
    assert screens and tiers <= {"micro", "light", "full"} and all(e["timeout_s"] > 0 for e in screens)
    # The search's full-tier run of the repair is its verification: verify does not run the kernel again.
    assert [e["tier"] for e in screens if e["digest"] == source_hash(repaired)].count("full") == 1
    # A screening names the edit it ran: which rule, at which line of the version it edits.
    before = Path("examples/softmax_tail/candidate.py").read_text().splitlines()
    changed = {n for n, (a, b) in enumerate(zip(before, repaired.splitlines()), 1) if a != b}
    named = [e for e in screens if e["digest"] == source_hash(repaired) and e["tier"] != "full"]
    assert named and all(isinstance(e.get("rule"), str) and e.get("line") in changed for e in named)
    runs = [e.get("reused", False) for e in events if e["event"] == "tool" and e.get("name") == "evaluate"]
    assert runs[0] is False and runs[1:] and all(runs[1:])  # the candidate as given, then each patch's


def test_scripted_llm_repairs_what_no_rule_covers_and_replay_reproduces_it(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    fix = edit(
        "    tl.store(out_ptr + offs, x * 3.0, mask=mask)", "    tl.store(out_ptr + offs, x * 2.0, mask=mask)"
    )
    with ScriptedOpenAIServer([{"content": fix, "usage": (900, 40)}]) as server:
        result = run(folder, llm_config(server), tmp_path)
    assert result.status == "repaired", (result.stop_reason, result.attempts)
    assert result.llm_calls == 1 and result.tokens == {"input": 900, "output": 40}
    prompt = server.requests[0]["messages"][1]["content"]
    assert "x * 3.0" in prompt and "constant_ratio" in prompt  # the mismatch report reaches the LLM
    events = [json.loads(line) for line in Path(result.trace_path).read_text().splitlines()]
    assert {"run_start", "node_start", "node_end", "llm_request", "llm_response", "tool", "run_end"} <= {
        e["event"] for e in events
    }
    proc = subprocess.run(
        [KMEDIC, "replay", result.trace_path, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    report = json.loads(proc.stdout)
    assert report["same"] and report["replayed"]["status"] == "repaired"
    assert report["replayed"]["nodes"] == report["recorded"]["nodes"]


def test_malformed_edit_is_fed_back_never_applied(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    good = edit(
        "    tl.store(out_ptr + offs, x * 3.0, mask=mask)", "    tl.store(out_ptr + offs, x * 2.0, mask=mask)"
    )
    script = [
        {"content": "I would change the constant.", "usage": (10, 5)},
        {"content": good, "usage": (10, 5)},
    ]
    with ScriptedOpenAIServer(script) as server:
        result = run(folder, llm_config(server), tmp_path)
    assert result.status == "repaired"
    assert result.llm_calls == 2
    retry_messages = server.requests[1]["messages"]
    if retry_messages[0]["content"] == render_prompt("region_system"):
        # The evidence (or a pattern an earlier run distilled) points at a statement: the retry asks about it
        # alone, and the SEARCH/REPLACE answer is still read as one.
        assert len(retry_messages) == 2 and "Write them again with the bug" in retry_messages[1]["content"]
    else:
        assert retry_messages[-2]["content"] == "I would change the constant."
        assert "could not be applied" in retry_messages[-1]["content"]


def test_patches_apply_to_the_best_version_after_a_regression(tmp_path: Path) -> None:
    folder = write_problem(
        tmp_path / "p",
        scale_candidate(("x * 2.0", "x * 3.0"), ("mask = offs < n\n", "mask = offs < n - 8\n")),
    )
    script = [
        {
            "content": edit(
                "    tl.store(out_ptr + offs, x * 3.0, mask=mask)",
                "    tl.store(out_ptr + offs, x * 2.0, mask=mask)",
            ),
            "usage": (1, 1),
        },
        {
            "content": edit(
                "    tl.store(out_ptr + offs, x * 2.0, mask=mask)",
                "    tl.store(out_ptr + offs, x * 5.0, mask=mask)",
            ),
            "usage": (1, 1),
        },
        {"content": edit("    mask = offs < n - 8", "    mask = offs < n"), "usage": (1, 1)},
    ]
    with ScriptedOpenAIServer(script) as server:
        result = run(folder, llm_config(server), tmp_path)
    assert [a["improved"] for a in result.attempts] == [True, False, False]
    assert result.attempts[2]["verdict"] == "pass"
    assert "5.0" not in result.attempts[2]["diff"]  # the third patch applied to the best, not the regression
    assert result.status == "repaired"
    assert "x * 2.0" in (result.repaired_source or "")


def test_a_patcher_that_never_converges_ends_on_its_budget(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    # Every answer applies and changes the kernel, none fixes it: only the guard can end this.
    script = [
        {
            "content": edit(
                "    tl.store(out_ptr + offs, x * 3.0, mask=mask)",
                f"    tl.store(out_ptr + offs, x * 3.0 + {i}.0, mask=mask)",
            ),
            "usage": (1, 1),
        }
        for i in range(1, 9)
    ]
    with ScriptedOpenAIServer(script) as server:
        capped = run(folder, llm_config(server, max_iterations=6, no_progress_limit=100), tmp_path / "a")
    assert (capped.status, capped.stop_reason, capped.iterations) == ("unrepaired", "max_iterations", 6)
    with ScriptedOpenAIServer(script) as server:
        stalled = run(folder, llm_config(server, max_iterations=100, no_progress_limit=3), tmp_path / "b")
    assert (stalled.status, stalled.stop_reason, stalled.iterations) == ("unrepaired", "no_progress", 3)
    assert stalled.best_source == (folder / "candidate.py").read_text()  # the best attempt is kept


STORE = "    tl.store(out_ptr + offs, x * 3.0, mask=mask)"
# A first step that gains (the first 512 elements right) but is the wrong road: the fix of the original's
# line no longer applies to it.
WRONG_ROAD = edit(STORE, "    tl.store(out_ptr + offs, tl.where(offs < 512, x * 2.0, x * 3.0), mask=mask)")


def no_gain(scale: str) -> dict:
    return {"content": edit("x * 2.0, x * 3.0)", f"x * 2.0, x * {scale})"), "usage": (1, 1)}


def test_a_dead_end_goes_back_to_the_version_before_it(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    script = [
        {"content": WRONG_ROAD, "usage": (1, 1)},
        no_gain("3.5"),
        no_gain("4.0"),
        {"content": edit(STORE, STORE.replace("3.0", "2.0")), "usage": (1, 1)},
    ]
    with ScriptedOpenAIServer(script) as server:
        result = run(folder, llm_config(server, no_progress_limit=2), tmp_path / "a")
    assert (result.status, [a["improved"] for a in result.attempts]) == (
        "repaired",
        [True, False, False, False],
    )
    assert result.repaired_source == scale_candidate()  # the fix applied to the original, not the dead end
    events = [e for e in read_trace(Path(result.trace_path)) if e["event"] == "backtrack"]
    assert [e["reason"] for e in events] == ["no_progress"]
    with ScriptedOpenAIServer(script) as server:
        stuck = run(folder, llm_config(server, no_progress_limit=2, max_backtracks=0), tmp_path / "b")
    assert (stuck.status, stuck.stop_reason) == ("unrepaired", "no_progress")
    assert "tl.where(offs < 512" in stuck.best_source


def test_the_best_attempt_survives_going_back(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    again = [{"content": edit(STORE, STORE.replace("3.0", s)), "usage": (1, 1)} for s in ("3.25", "3.75")]
    script = [{"content": WRONG_ROAD, "usage": (1, 1)}, no_gain("3.5"), no_gain("4.0"), *again]
    with ScriptedOpenAIServer(script) as server:
        result = run(folder, llm_config(server, no_progress_limit=2), tmp_path)
    # Back at the original nothing gains either: the run stops, reporting the dead end that scored best.
    assert (result.status, result.stop_reason) == ("unrepaired", "no_progress")
    assert "tl.where(offs < 512" in result.best_source
    assert result.score == pytest.approx(512 / 4000, abs=0.01)


def test_repeating_an_earlier_version_is_oscillation(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    same = edit(
        "    tl.store(out_ptr + offs, x * 3.0, mask=mask)", "    tl.store(out_ptr + offs, x * 4.0, mask=mask)"
    )
    with ScriptedOpenAIServer([{"content": same, "usage": (1, 1)}] * 2) as server:
        result = run(folder, llm_config(server), tmp_path)
    assert (result.status, result.stop_reason, result.iterations) == ("unrepaired", "oscillation", 1)


def test_token_budget_stops_the_run(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    script = [
        {
            "content": edit(
                "    tl.store(out_ptr + offs, x * 3.0, mask=mask)",
                f"    tl.store(out_ptr + offs, x * 3.{i}, mask=mask)",
            ),
            "usage": (700, 300),
        }
        for i in range(1, 5)
    ]
    with ScriptedOpenAIServer(script) as server:
        result = run(folder, llm_config(server, max_tokens=2000), tmp_path)
    assert (result.stop_reason, result.llm_calls, result.tokens["input"]) == ("max_tokens", 2, 1400)


def test_a_cheating_patch_is_turned_back_and_never_repaired(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")))
    launch = "        scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)\n        return out"
    script = [
        {"content": edit(launch, "        return torch.mul(x, 2.0)"), "usage": (1, 1)},
        {"content": edit(launch, "        return x * 2.0"), "usage": (1, 1)},
    ]
    with ScriptedOpenAIServer(script) as server:
        result = run(folder, llm_config(server, max_llm_calls=2), tmp_path)
    assert result.status == "rejected"
    assert result.repaired_source is None
    assert result.integrity["verdict"] == "cheat"
    assert all(a["verdict"] == "pass" for a in result.attempts)  # both passed the tests; the gate said no
    second_prompt = server.requests[1]["messages"][1]["content"]
    assert "integrity gate refused" in second_prompt and "torch.mul" in second_prompt


def test_hybrid_uses_rules_first_and_the_llm_only_when_they_run_out(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")), OPAQUE_SCALE_REFERENCE)
    fix = edit(
        "    tl.store(out_ptr + offs, x * 3.0, mask=mask)", "    tl.store(out_ptr + offs, x * 2.0, mask=mask)"
    )
    with ScriptedOpenAIServer([{"content": fix, "usage": (5, 5)}]) as server:
        result = run(
            folder, RepairConfig(strategy="hybrid", base_url=server.base_url, workers=2), tmp_path / "a"
        )
    assert result.status == "repaired" and result.llm_calls == 1
    assert [a["strategy"] for a in result.attempts] == ["llm"]  # no rule can read the hidden constant
    with ScriptedOpenAIServer([]) as server:  # any LLM request here would fail the run
        example = run(
            Path("examples/softmax_tail"),
            RepairConfig(strategy="hybrid", base_url=server.base_url, workers=2),
            tmp_path / "b",
        )
    assert example.status == "repaired" and example.llm_calls == 0 and server.requests == []


def test_arepair_runs_the_same_repair_for_asyncio_callers(tmp_path: Path) -> None:
    import asyncio

    from kernel_medic.graph.api import arepair

    result = asyncio.run(
        arepair(
            "examples/softmax_tail",
            None,
            RepairConfig(workers=2),
            trace=tmp_path / "t.jsonl",
            checkpoint_db=tmp_path / "c.sqlite",
        )
    )
    assert result.status == "repaired" and Path(result.trace_path).exists()


def test_invalid_problem_is_a_result_not_an_exception(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", scale_candidate(("class ModelNew", "class Other")))
    result = run(folder, RepairConfig(workers=2), tmp_path)
    assert result.status == "invalid" and "ModelNew" in result.error


def test_a_patch_that_hangs_on_the_light_case_is_not_run_on_the_full_tier(tmp_path: Path) -> None:
    # A crash (score 0) patched into a hang: the full tier would only time out once per case.
    numel = "        n = x.numel()\n"
    crashing = scale_candidate((numel, numel + "        raise RuntimeError('no')\n"))
    folder = write_problem(tmp_path / "p", crashing, toml="timeout_s = 3\nseeds = [0, 1, 2]\n")
    hang = edit("        raise RuntimeError('no')", "        while True:\n            pass")
    script = [{"content": hang, "usage": (1, 1)}]
    with ScriptedOpenAIServer(script) as server:
        result = run(folder, llm_config(server, max_iterations=1), tmp_path)
    assert result.attempts[0]["verdict"] == "timeout"
    tiers = [
        e["tier"]
        for e in map(json.loads, (tmp_path / "trace.jsonl").read_text().splitlines())
        if e.get("event") == "tool" and e.get("verdict") == "timeout"
    ]
    assert tiers == ["light"]
