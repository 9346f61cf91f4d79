"""verify once the run's wall budget is spent: a patch gets the floor, not the problem's whole time limit."""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import pytest
from problems import LIGHT_TOML, SCALE_CANDIDATE, node_state, scale_candidate, write_problem

verify_node = importlib.import_module("kernel_medic.nodes.verify")


def test_a_late_patch_that_hangs_is_cut_at_the_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_node, "VERIFY_FLOOR_S", 4.0)
    sleep = "        import time\n\n        time.sleep(600)\n        x = x.contiguous()\n"
    hanging = scale_candidate(("        x = x.contiguous()\n", sleep))
    # Each case may take 120 s by the problem's own limit; the run's 5 s budget was spent at 6 s.
    folder = write_problem(tmp_path / "p", SCALE_CANDIDATE, toml=LIGHT_TOML + "timeout_s = 120\n")
    state = node_state(
        folder,
        SCALE_CANDIDATE,
        config={"workers": 1, "wall_budget_s": 5.0},
        wall_s=6.0,
        pending={"source": hanging, "strategy": "llm", "hypothesis": "h", "rule": "r", "description": "d"},
        trace_path=str(tmp_path / "trace.jsonl"),
    )
    start = time.monotonic()
    delta = verify_node.verify(state)
    took = time.monotonic() - start
    assert delta["attempts"][-1]["verdict"] == "timeout"
    assert took < 60, took  # the light case alone would have run for its 120 s


def test_no_screening_starts_once_the_wall_budget_and_the_proposal_deadline_have_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch_node = importlib.import_module("kernel_medic.nodes.patch")
    folder = write_problem(tmp_path / "p", scale_candidate(("x * 2.0", "x * 3.0")), toml=LIGHT_TOML)
    state = node_state(
        folder,
        scale_candidate(("x * 2.0", "x * 3.0")),
        config={"workers": 1, "wall_budget_s": 5.0},
        wall_s=6.0,
        trace_path=str(tmp_path / "trace.jsonl"),
    )
    evaluate = patch_node._offline(state, mutations=False).evaluate
    fixed = scale_candidate()
    assert evaluate(fixed, "light")["verdict"] == "pass"  # within the proposal's own floor: it runs

    class Later:
        @staticmethod
        def monotonic() -> float:
            return time.monotonic() + 3600.0

    monkeypatch.setattr(patch_node, "time", Later)
    skipped = evaluate(fixed, "full")
    assert skipped["verdict"] == "timeout" and skipped["cut_short"] and skipped["cases"] == []


def _report(score: float, passing: tuple[str, ...]) -> dict:
    cases = [
        {"name": n, "verdict": "pass" if n in passing else "mismatch"} for n in ("seed0", "seed1", "x100")
    ]
    return {"verdict": "mismatch", "score": score, "tier": "full", "cases": cases}


@pytest.mark.parametrize(
    ("rule", "score", "passing", "progress"),
    [
        ("mut_bound_pm1", 0.9512, ("seed0",), False),  # a threshold crept up by one: a few elements
        ("mut_bound_pm1", 0.9600, ("seed0",), True),  # a real share of the output
        ("mut_compare", 0.9512, ("seed0", "x100"), True),  # one more case passes
        ("grid_cdiv", 0.9512, ("seed0",), True),  # a typed edit counts at any gain
    ],
)
def test_a_blind_mutation_must_gain_more_than_noise_to_be_progress(
    tmp_path: Path, rule: str, score: float, passing: tuple[str, ...], progress: bool
) -> None:
    folder = write_problem(tmp_path / "p", SCALE_CANDIDATE, toml=LIGHT_TOML)
    patched = SCALE_CANDIDATE + "\n# patched\n"
    pending = {"source": patched, "strategy": "offline", "hypothesis": "h", "rule": rule, "description": "d"}
    state = node_state(
        folder,
        SCALE_CANDIDATE,
        best_score=0.951,
        best_report=_report(0.951, ("seed0",)),
        pending={**pending, "full_report": _report(score, passing)},  # the search's own run: reused
        trace_path=str(tmp_path / "trace.jsonl"),
    )
    delta = verify_node.verify(state)
    assert delta["attempts"][-1]["improved"] is progress
    assert (delta.get("best_source") == patched) is progress
    assert delta.get("no_progress", 0) == (0 if progress else 1)
