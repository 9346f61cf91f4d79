"""The LLM strategy against a scripted OpenAI-compatible server on 127.0.0.1 (the only fake, at the network
edge): answer forms in a run, several samples, no-progress stops, caps, timeouts, honest output, CLI bugs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_medic.graph.api import repair
from kernel_medic.graph.config import RepairConfig
from kernel_medic.nodes import patch as patch_node
from kernel_medic.tools.diagnosis.localise import rank_statements
from kernel_medic.tools.repair.fill_in import fill_in_family
from kernel_medic.tools.repair.llm import LLMClient, LLMSettings
from kernel_medic.tools.repair.llm_patch import LLMBudget, LLMOptions, LLMPatcher
from kernel_medic.tools.repair.llm_prompt import Anchor, fill_in_reply, with_twins
from kernel_medic.tools.repair.patchers import PatchRequest
from kernel_medic.tools.trace import source_hash
from openai_server import ScriptedOpenAIServer
from problems import LIGHT_TOML, OPAQUE_SCALE_REFERENCE, scale_candidate, write_problem
from test_search import request_for

KMEDIC = str(Path(sys.executable).parent / "kmedic")
BROKEN = scale_candidate(("x * 2.0", "x * 3.0"))
FIXED = scale_candidate()
OLD = "    tl.store(out_ptr + offs, x * 3.0, mask=mask)"
NEW = "    tl.store(out_ptr + offs, x * 2.0, mask=mask)"
PROSE = "I would change the constant."
AT_LINE_13 = [  # an evidence-backed hypothesis located on the store line
    {"bug_class": "operator_misread", "evidence": ["constant_ratio"], "location": "candidate.py:13"}
]


def sr(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def request(**kw: object) -> PatchRequest:
    fields: dict = dict(
        problem_name="scale",
        reference_source=OPAQUE_SCALE_REFERENCE,
        report={"verdict": "mismatch", "score": 0.0},
    )
    fields.update(kw)
    return request_for(fields.pop("source", BROKEN), **fields)


def patcher(
    server: ScriptedOpenAIServer,
    calls: int = 20,
    no_edit: int = 3,
    localise: object = None,
    used: int = 0,
    **options: object,
) -> LLMPatcher:
    client = LLMClient(
        LLMSettings(
            model="scripted",
            base_url=server.base_url,
            backoff_s=0.0,
            timeout_s=float(options.pop("timeout_s", 30.0)),
            max_retries=1,
        )
    )  # type: ignore[arg-type]
    budget = LLMBudget(calls, no_edit, 600.0, no_edit_used=used)
    return LLMPatcher(client, LLMOptions(**options), budget, localise=localise)  # type: ignore[arg-type]


def test_samples_are_all_counted_and_sampled_differently() -> None:
    script = [{"content": PROSE, "usage": (100, 10)}, {"content": sr(OLD, NEW), "usage": (100, 20)}]
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server, samples=2).propose(request())
    assert outcome.proposal is not None and outcome.proposal.source == FIXED
    assert (outcome.llm_calls, outcome.input_tokens, outcome.output_tokens) == (2, 200, 30)
    assert sorted(r["temperature"] for r in server.requests) == [0.0, 0.7]
    assert sorted(a["form"] for a in outcome.answers) == ["none", "search_replace"]
    assert outcome.proposal.description.startswith("llm search_replace, line 13:")


def test_parallel_samples_count_the_rounds_elapsed_llm_time_not_their_sum() -> None:
    script = [{"content": PROSE, "usage": (1, 1), "delay_s": 1.0}] * 2
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server, samples=2, rounds=1, no_edit=1, parallel_samples=True).propose(request())
    walls = [a["wall_s"] for a in outcome.answers]
    assert len(walls) == 2 and min(walls) >= 1.0
    assert max(walls) - 0.001 <= outcome.llm_wall_s < 0.75 * sum(walls), (outcome.llm_wall_s, walls)


def test_no_applicable_edit_is_a_no_progress_step_and_retries_vary() -> None:
    echo = sr("    total = tl.sum(vals, axis=0) / BLOCK_SIZE", "    total = tl.sum(vals, axis=0) / n_cols")
    with ScriptedOpenAIServer([{"content": echo, "usage": (5, 5)}] * 5) as server:
        outcome = patcher(server, rounds=5, no_edit=2).propose(request())
    assert outcome.proposal is None and outcome.no_edit == 2 and outcome.llm_calls == 2
    assert [r.get("temperature") for r in server.requests] == [0.0, 0.7]
    feedback = server.requests[1]["messages"][-1]["content"]
    assert "you repeated the template/example text" in feedback


def test_a_retry_names_the_likely_bug_and_its_usual_fix() -> None:
    hyps = [
        {
            "bug_class": "operator_misread",
            "confidence": 0.6,
            "evidence": ["constant_ratio"],
            "lines": [13, 13],
        }
    ]
    pats = [
        {"title": "t", "bug_class": "operator_misread", "fix": "Use the reference's constant.", "score": 0.6}
    ]
    script = [
        {"content": f"```python\n{BROKEN}```", "usage": (5, 5)},
        {"content": sr(OLD, NEW), "usage": (5, 5)},
    ]
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server).propose(request(hypotheses=hyps, patterns=pats))
    assert outcome.proposal is not None and outcome.answers[0]["refusal"].startswith(
        "the code you gave is the current"
    )
    retry = server.requests[1]["messages"][-1]["content"]
    assert "operator misread (around lines 13-13). The usual fix: Use the reference's constant." in retry


def test_the_call_cap_is_never_overshot() -> None:
    with ScriptedOpenAIServer([{"content": PROSE, "usage": (1, 1)}] * 9) as server:
        outcome = patcher(server, calls=3, no_edit=100, rounds=10, samples=2).propose(request())
    assert outcome.llm_calls == 3 and len(server.requests) == 3


def test_a_large_rewrite_is_refused_and_the_reason_fed_back() -> None:
    rewrite = FIXED.replace("pid", "program").replace("offs", "offsets").replace("mask", "m")
    script = [
        {"content": f"```python\n{rewrite}```", "usage": (1, 1)},
        {"content": sr(OLD, NEW), "usage": (1, 1)},
    ]
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server, max_fraction=0.15).propose(request())
    assert outcome.proposal is not None and outcome.proposal.source == FIXED
    assert "regeneration" in outcome.answers[0]["refusal"]
    assert "regeneration, not a repair" in server.requests[1]["messages"][-1]["content"]


def test_a_timed_out_request_s_prompt_tokens_are_counted_as_an_estimate() -> None:
    script = [{"delay_s": 2.0, "content": "late"}, {"content": sr(OLD, NEW), "usage": (50, 5)}]
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server, timeout_s=0.5).propose(request())
    assert outcome.proposal is not None
    assert outcome.input_tokens > 50 + 100  # the lost prompt is counted (estimated: several hundred tokens)
    assert outcome.answers[0]["tokens_estimated"] is True


def test_a_prompt_over_budget_is_trimmed_lowest_value_first() -> None:
    tried = [
        {"description": f"try {i}", "verdict": "mismatch", "score": 0.1, "diff": "x\n" * 400}
        for i in range(4)
    ]
    with ScriptedOpenAIServer([{"content": sr(OLD, NEW), "usage": (1, 1)}]) as server:
        outcome = patcher(server, prompt_tokens=1500).propose(request(failed_attempts=tried))
    assert outcome.trimmed[0] == "failed_attempts"
    prompt = server.requests[0]["messages"][1]["content"]
    assert BROKEN in prompt and "scale_kernel" in prompt  # the kernel is always kept


def llm_config(server: ScriptedOpenAIServer, **overrides: object) -> RepairConfig:
    return RepairConfig(strategy="llm", base_url=server.base_url, model="scripted", workers=1, **overrides)


def test_a_run_applies_a_fenced_file_after_an_echoed_template_and_reports_it(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    answer = sr("lines copied exactly from the current candidate, including indentation", "the lines") + (
        "\nHere is the corrected code:\n```python\n" + FIXED + "```\n"
    )
    with ScriptedOpenAIServer([{"content": answer, "usage": (900, 400)}]) as server:
        result = repair(
            folder, None, llm_config(server), trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "c"
        )
    assert result.status == "repaired" and result.llm_calls == 1
    [record] = result.llm_answers
    assert record["form"] == "fenced_code" and record["applied"] and record["input_tokens"] == 900
    assert result.attempts[-1]["description"].startswith("llm fenced_code, line 13:")
    assert result.llm_wall_s > 0


def test_a_run_stops_after_k_answers_without_an_edit_and_says_so(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    with ScriptedOpenAIServer([{"content": PROSE, "usage": (3, 3)}] * 6) as server:
        result = repair(
            folder,
            None,
            llm_config(server, llm_no_edit_limit=2, edit_retries=5),
            trace=tmp_path / "t.jsonl",
            checkpoint_db=tmp_path / "c",
        )
    assert (result.status, result.stop_reason, result.llm_calls) == ("unrepaired", "llm_no_edit", 2)
    # The stop says why, with the last answer's reason (a plain "no edit found", or the region question's).
    assert "llm_no_edit_limit" in result.error and result.llm_answers[-1]["refusal"][:40] in result.error
    assert [a["applied"] for a in result.llm_answers] == [False, False]
    assert result.tokens == {"input": 6, "output": 6}


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [KMEDIC, *args], capture_output=True, text=True, timeout=timeout, env={**base, **(env or {})}
    )


def test_llm_strategies_without_an_endpoint_fail_in_one_line_before_any_work(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    for args in (
        ["repair", str(folder), "--strategy", "llm"],
        ["bench", "benchmarks/near_miss", "--strategy", "hybrid", "--out", str(tmp_path / "b")],
    ):
        proc = cli(*args, env={"KMEDIC_DATA_DIR": str(tmp_path / "data")}, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "needs an LLM endpoint" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_negative_and_zero_budgets_are_bad_input(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    proc = cli("repair", str(folder), "--max-iterations", "-3")
    assert proc.returncode == 2 and "max_iterations must be at least 1, got -3" in proc.stderr
    proc = cli("repair", str(folder), env={"KMEDIC_MAX_LLM_CALLS": "0"})
    assert proc.returncode == 2 and "max_llm_calls must be at least 1" in proc.stderr
    proc = cli("bench", "benchmarks/near_miss", "--max-iterations", "0", "--out", str(tmp_path / "b"))
    assert proc.returncode == 2 and "max_iterations" in proc.stderr


def test_replay_leaves_no_temporary_folder_behind(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    with ScriptedOpenAIServer([{"content": sr(OLD, NEW), "usage": (9, 9)}]) as server:
        result = repair(
            folder, None, llm_config(server), trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "c"
        )
    assert result.status == "repaired"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = cli("replay", result.trace_path, "--json", env={"TMPDIR": str(scratch), "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    report = json.loads(proc.stdout)
    assert report["same"] and Path(report["trace_path"]).is_file()
    assert list(scratch.glob("kmedic-replay-*")) == []


def test_after_an_unchanged_answer_the_anchored_lines_are_asked_about_alone() -> None:
    # A small model gave the file back unchanged although the prompt named the line: the retry is a short
    # question about that line alone, and its one-line reply (indentation lost) is the edit.
    pats = [{"title": "wrong scale", "bug_class": "x", "fix": "f", "changes": [[OLD.strip(), NEW.strip()]]}]
    script = [
        {"content": f"```python\n{BROKEN}```", "usage": (50, 50)},
        {"content": f"```python\n{NEW.strip()}\n```", "usage": (5, 5)},
    ]
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server).propose(request(patterns=pats))
    assert outcome.proposal is not None and outcome.proposal.source == FIXED
    assert [a["form"] for a in outcome.answers] == ["none", "region"]
    assert outcome.answers[1]["region"] == [13, 13]
    question = server.requests[1]["messages"]
    asked = question[1]["content"]
    assert len(question) == 2 and OLD.strip() in asked and "line 13" in asked
    assert BROKEN not in asked  # the few lines, not the file
    assert server.requests[1]["temperature"] == 0.0  # a new question, asked like the first


def test_without_an_anchored_line_the_region_question_is_about_where_the_evidence_points() -> None:
    # No knowledge-base pattern looks like any line, but the diagnosis places its evidence-backed hypothesis
    # on line 13: after an unchanged answer the model is asked about that statement alone.
    script = [
        {"content": f"```python\n{BROKEN}```", "usage": (50, 50)},
        {"content": f"```python\n{NEW.strip()}\n```", "usage": (5, 5)},
    ]
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server).propose(request(hypotheses=AT_LINE_13))
    assert outcome.proposal is not None and outcome.proposal.source == FIXED
    assert outcome.answers[1]["region"] == [13, 13]
    asked = server.requests[1]["messages"][1]["content"]
    assert OLD.strip() in asked and "the diagnosis suspects operator misread here" in asked
    assert BROKEN not in asked
    assert "class Model(nn.Module)" in asked  # what the kernel must compute, which the few lines cannot say


def test_a_region_an_earlier_llm_edit_rewrote_in_vain_is_asked_about_last() -> None:
    case = {"name": "seed0", "verdict": "mismatch", "pattern": "everywhere"}
    report = {"verdict": "mismatch", "cases": [case]}
    diff = f"--- a\n+++ b\n@@ -13 +13 @@\n-{OLD}\n+{OLD}  #\n"
    failed = [{"strategy": "llm", "verdict": "mismatch", "diff": diff}]
    script = [{"content": f"```python\n{BROKEN}```", "usage": (5, 5)}, {"content": "```python\nx\n```"}]
    with ScriptedOpenAIServer(script) as server:
        # The localiser from the report alone (the run's own records values in the sandbox).
        localise = lambda source, rep: rank_statements(source, rep).lines  # noqa: E731
        outcome = patcher(server, no_edit=2, localise=localise).propose(
            request(hypotheses=AT_LINE_13, report=report, failed_attempts=failed)
        )
    # Line 13 was rewritten by a failed LLM edit: the question goes to the localiser's top statement.
    assert outcome.answers[1]["region"] != [13, 13] and outcome.answers[1]["region"][0] in range(9, 14)


def test_with_region_first_the_first_question_is_about_the_suspect_lines() -> None:
    # A small model skims a whole file and gives it back: with region_first it is never shown the file, and
    # its one-line answer is the edit in one call.
    script = [{"content": f"```python\n{NEW.strip()}\n```", "usage": (5, 5)}]
    with ScriptedOpenAIServer(script) as server:
        outcome = patcher(server, region_first=True).propose(request(hypotheses=AT_LINE_13))
    assert outcome.proposal is not None and outcome.proposal.source == FIXED
    assert outcome.llm_calls == 1 and outcome.answers[0]["region"] == [13, 13]
    assert BROKEN not in server.requests[0]["messages"][1]["content"]
    assert server.requests[0]["temperature"] == 0.0


def test_region_questions_go_on_from_the_regions_earlier_rounds_already_asked_about() -> None:
    # The run already asked about the hypothesis' line (of this same source): the next patch step asks about
    # the localiser's statement first, not the same line again at the same temperature.
    report = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch"}]}
    script = [{"content": PROSE, "usage": (5, 5)}] * 2
    with ScriptedOpenAIServer(script) as server:
        localise = lambda source, rep: [11, 13]  # noqa: E731
        fresh = patcher(server, no_edit=1, localise=localise, region_first=True)
        first = fresh.propose(request(hypotheses=AT_LINE_13, report=report))
        later = patcher(server, no_edit=1, localise=localise, region_first=True, used=1)
        second = later.propose(request(hypotheses=AT_LINE_13, report=report, asked_regions={(13, 13)}))
    assert first.answers[0]["region"] == [13, 13] and first.no_edit == 1
    assert second.answers[0]["region"] == [11, 11]
    assert [r["temperature"] for r in server.requests] == [0.0, 0.0]  # each a new question
    with ScriptedOpenAIServer(script) as server:
        # Both regions asked about: the next question repeats one, and is sampled hotter.
        again = patcher(server, no_edit=1, localise=localise, region_first=True, used=2)
        both = {(13, 13), (11, 11)}
        third = again.propose(request(hypotheses=AT_LINE_13, report=report, asked_regions=both))
    assert third.answers[0]["region"] == [13, 13] and server.requests[0]["temperature"] > 0.0


def test_a_region_answer_repeating_a_tried_edit_moves_on_to_the_next_region() -> None:
    # The fix the model writes for line 13 was tried already (and failed): that region is spent, so the
    # next question is about the localiser's statement instead of the run ending on an oscillation.
    report = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch"}]}
    script = [{"content": f"```python\n{NEW.strip()}\n```", "usage": (5, 5)}, {"content": PROSE}]
    with ScriptedOpenAIServer(script) as server:
        localise = lambda source, rep: [11, 13]  # noqa: E731
        outcome = patcher(server, no_edit=2, localise=localise, region_first=True).propose(
            request(hypotheses=AT_LINE_13, report=report, seen_hashes={source_hash(FIXED)})
        )
    assert not outcome.oscillation
    assert [a["region"] for a in outcome.answers] == [[13, 13], [11, 11]]
    assert "already tried" in outcome.answers[0]["refusal"]


def test_lines_a_failed_llm_edit_rewrote_are_asked_about_after_the_evidence_even_when_anchored() -> None:
    # A pattern anchors the store line, but the model's rewrite of it already failed: asked first again,
    # a small model writes the same edit, so the evidence's other statement goes first.
    pats = [{"title": "wrong scale", "bug_class": "x", "fix": "f", "changes": [[OLD.strip(), NEW.strip()]]}]
    report = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch"}]}
    diff = f"--- a\n+++ b\n@@ -13 +13 @@\n-{OLD}\n+x\n"
    failed = [{"strategy": "llm", "verdict": "mismatch", "diff": diff}]
    with ScriptedOpenAIServer([{"content": PROSE}]) as server:
        localise = lambda source, rep: [11, 13]  # noqa: E731
        outcome = patcher(server, no_edit=1, localise=localise, region_first=True).propose(
            request(patterns=pats, report=report, failed_attempts=failed)
        )
    assert outcome.answers[0]["region"] == [11, 11]


TRIM_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, border_width):
        super().__init__()
        self.border_width = border_width

    def forward(self, x):
        b = self.border_width
        return x[:, b:-b, b:-b] * 2.0


def get_inputs():
    return [torch.randn(2, 12, 10)]


def get_init_inputs():
    return [2]
"""

TRIM_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def trim_kernel(x_ptr, out_ptr, H, W, H_out, W_out, B, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    keep = offs < H_out * W_out
    src = (offs // W_out + B) * W + offs % W_out + B
    x = tl.load(x_ptr + plane * H * W + src, mask=keep, other=0.0)
    tl.store(out_ptr + plane * H_out * W_out + offs, x * 2.0, mask=keep)


class ModelNew(nn.Module):
    def __init__(self, border_width):
        super().__init__()
        self.border_width = border_width

    def forward(self, x):
        x = x.contiguous()
        N, H, W = x.shape
        border = self.border_width
        H_out = H - border
        W_out = W - border
        out = torch.empty(N, H_out, W_out, device=x.device, dtype=x.dtype)
        block = triton.next_power_of_2(H_out * W_out)
        trim_kernel[(N,)](x, out, H, W, H_out, W_out, border, BLOCK=block)
        return out
"""


def test_a_half_right_answer_is_completed_with_the_wrappers_name_and_the_twin_line(tmp_path: Path) -> None:
    # What a 1.5B model answered on a convolution: one of the two size lines fixed, with the reference's name
    # for a value the wrapper calls otherwise. As written it is a NameError, and the shape is still wrong.
    folder = write_problem(tmp_path / "p", TRIM_CANDIDATE, TRIM_REFERENCE, LIGHT_TOML)
    answer = sr("        H_out = H - border", "        H_out = H - 2 * border_width")
    with ScriptedOpenAIServer([{"content": answer, "usage": (50, 10)}]) as server:
        result = repair(
            folder, None, llm_config(server), trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "c"
        )
    assert result.status == "repaired" and result.llm_calls == 1, result.error
    [record] = result.llm_answers
    assert record["notes"] == ["read `border_width` as `border` (no `border_width` is defined there)"]
    assert record["light"] < record["light_parallel"] == 1.0  # the answer alone vs. with its twin
    assert result.attempts[-1]["description"].endswith("(and 1 parallel line alike)")
    fixed = TRIM_CANDIDATE.replace("- border\n", "- 2 * border\n")
    assert (folder / "candidate.py").read_text() == TRIM_CANDIDATE  # the candidate itself is never edited
    assert result.repaired_source == fixed


def test_the_right_change_in_an_answer_with_noise_beside_it_is_tried_alone(tmp_path: Path) -> None:
    # As a 1.5B model answered on an exclusive scan (`inclusive - x` written, the row's offsets dropped
    # beside it): the fix with noise. As written the answer fails; its right change alone is the repair.
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    noisy = "    tl.store(out_ptr + offs // 2, x * 2.0, mask=mask)"
    with ScriptedOpenAIServer([{"content": sr(OLD, noisy), "usage": (50, 10)}]) as server:
        result = repair(
            folder, None, llm_config(server), trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "c"
        )
    assert result.status == "repaired" and result.llm_calls == 1, result.error
    [record] = result.llm_answers
    assert record["light"] < record["light_part"] == 1.0  # the answer as written vs. its right part alone
    assert result.attempts[-1]["description"].endswith("(part of the answer: `3.0` -> `2.0`)")
    assert result.repaired_source == FIXED


def test_a_slow_model_s_answers_are_screened_when_they_arrive(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A local model's round outlasted the proposal's screening window, timed from before the model was
    # asked: every answer came back "timed out" unscreened and the first version (here the answer as
    # written) was taken. The window opens when the answers are in.
    monkeypatch.setattr(patch_node, "PROPOSAL_BUDGET_S", 5.0)  # the shortest window: 10 s
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    noisy = "    tl.store(out_ptr + offs // 2, x * 2.0, mask=mask)"
    script = [{"content": sr(OLD, noisy), "usage": (50, 10), "delay_s": 11.0}]
    with ScriptedOpenAIServer(script) as server:
        result = repair(
            folder, None, llm_config(server), trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "c"
        )
    assert result.status == "repaired" and result.llm_calls == 1, result.error
    screens = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert not [e for e in screens if e["event"] == "screen" and e.get("skipped")]


def test_a_round_ends_when_the_model_repeats_itself_and_the_calls_left_ask_other_regions() -> None:
    # A small model that gives the same lines back at two temperatures gives them at a third: the round
    # ends there (a comment or spacing does not make an answer new), and the next region is asked.
    report = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch"}]}
    lines = [13, 12, 11, 10, 9]
    echo = [
        {"content": f"```python\n{BROKEN.splitlines()[line - 1].strip()}{note}", "usage": (5, 5)}
        for line in lines
        for note in ("\n```", "  # fixed\n```\nThis line is right.")
    ]
    with ScriptedOpenAIServer(echo) as server:
        localise = lambda source, rep: lines  # noqa: E731
        outcome = patcher(
            server, calls=10, no_edit=5, localise=localise, region_first=True, samples=3, rounds=5, regions=5
        ).propose(request(report=report))
    assert outcome.llm_calls == 10 and outcome.no_edit == 5
    assert [a["region"][0] for a in outcome.answers] == [line for line in lines for _ in range(2)]
    # Asked at once (a server that serves several requests), every sample of the round is asked.
    with ScriptedOpenAIServer(echo[:3]) as server:
        outcome = patcher(
            server, calls=3, no_edit=1, localise=localise, region_first=True, samples=3, parallel_samples=True
        ).propose(request(report=report))
    assert outcome.llm_calls == 3


def test_answers_the_light_case_cannot_tell_apart_are_told_apart_by_the_judges_tier(tmp_path: Path) -> None:
    # Both answers pass the one light case (inputs drawn from randn never exceed 50); only one passes the
    # full tier (the x100 values do). Proposing the first light pass would verify the wrong one and never
    # the right one.
    toml = "seeds = [0, 1]\nautomatic_shapes = false\n"
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, toml)
    clipped = "    tl.store(out_ptr + offs, tl.where(x > 50.0, x, x * 2.0), mask=mask)"
    script = [{"content": sr(OLD, clipped), "usage": (5, 5)}, {"content": sr(OLD, NEW), "usage": (5, 5)}]
    with ScriptedOpenAIServer(script) as server:
        result = repair(
            folder,
            None,
            llm_config(server, llm_samples=2),
            trace=tmp_path / "t.jsonl",
            checkpoint_db=tmp_path / "c",
        )
    assert result.status == "repaired" and result.llm_calls == 2, result.error
    assert [a["light"] for a in result.llm_answers] == [1.0, 1.0]
    assert len(result.attempts) == 1 and result.repaired_source == FIXED


def test_every_second_region_answer_is_asked_with_the_mistake_named_first() -> None:
    # A real 1.5B model gave half of its region answers back unchanged; asked to say what is wrong first,
    # it rarely did. Its fix then often sits in its sentence, not in a fence: that is read too.
    report = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch"}]}
    script = [
        {"content": f"```python\n{OLD.strip()}\n```", "usage": (5, 5)},
        {"content": f"The factor is wrong: it should be `{NEW.strip()}`.", "usage": (5, 9)},
    ]
    with ScriptedOpenAIServer(script) as server:
        localise = lambda source, rep: [13]  # noqa: E731
        ask = patcher(server, localise=localise, region_first=True, samples=2)
        outcome = ask.propose(request(report=report))
        asked = [r["messages"] for r in server.requests]
        caps = [r.get("max_tokens") for r in server.requests]  # the field llama.cpp reads
    assert outcome.llm_calls == 2 and outcome.proposal is not None
    assert outcome.proposal.source == FIXED
    plain, reasoned = asked
    assert OLD.strip() in plain[1]["content"] and OLD.strip() in reasoned[1]["content"]  # the same lines
    assert "giving them back unchanged is not an answer" in plain[-1]["content"]
    assert "Say in one short sentence what they get wrong" in reasoned[-1]["content"]
    assert "one short sentence naming the mistake" in reasoned[0]["content"]
    # A question about one line gets a reply cap to match (the model went on for paragraphs).
    assert all(isinstance(cap, int) and 200 < cap < 400 for cap in caps), caps


def test_a_code_model_is_asked_to_fill_in_the_suspect_lines_without_seeing_them() -> None:
    # Asked in chat about the true bug lines, a real 1.5B code model gave 48 of 63 answers back unchanged;
    # asked to fill them in unseen (the reference as another file of the repository), 7 of 63, and it wrote
    # a passing line on cases the chat question never fixed. It does not stop where the hole ends: only the
    # region's own number of lines is read.
    report = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch"}]}
    script = [
        {"content": NEW + "\n\n\n@triton.jit\ndef other_kernel(x_ptr):\n", "usage": (700, 30)},
        {"content": f"```python\n{OLD.strip()}\n```", "usage": (80, 9)},  # the chat question, unchanged
    ]
    with ScriptedOpenAIServer(script) as server:
        client = LLMClient(
            LLMSettings(model="Qwen2.5-Coder-1.5B-Instruct", base_url=server.base_url, backoff_s=0.0)
        )
        assert client.fill_in_family() == "qwen-coder"
        budget = LLMBudget(20, 3, 600.0)
        options = LLMOptions(region_first=True, samples=2)
        ask = LLMPatcher(client, options, budget, localise=lambda source, rep: [13])
        outcome = ask.propose(request(report=report))
        fill, chat = server.requests
    assert outcome.proposal is not None and outcome.proposal.source == FIXED
    assert (outcome.llm_calls, outcome.input_tokens, outcome.output_tokens) == (2, 780, 39)
    assert fill["_route"] == "/v1/completions" and chat["_route"] == "/v1/chat/completions"
    [prompt] = fill["prompt"]  # langchain sends a list of one
    lines = BROKEN.splitlines(keepends=True)
    before, after = "".join(lines[:12]), "".join(lines[13:])
    assert prompt.endswith(f"<|fim_prefix|>{before}<|fim_suffix|>{after}<|fim_middle|>")
    assert OLD not in prompt and "x * 2.0" in prompt  # the lines are hidden; the reference is shown
    assert "<|endoftext|>" in fill["stop"] and 0 < fill["max_tokens"] < 100
    assert fill["temperature"] == chat["temperature"] == 0.0  # each form's first asking is at the base
    first = outcome.answers[0]
    assert first["applied"] and first["chosen"] and first["region"] == [13, 13]
    assert [a["question"] for a in outcome.answers] == ["fill_in", "lines"]  # the output says which form


def test_fill_in_is_asked_only_of_models_whose_template_is_known() -> None:
    assert fill_in_family("auto", "Qwen/Qwen2.5-Coder-7B-Instruct") == "qwen-coder"
    assert fill_in_family("auto", "qwen2.5-coder-1.5b-instruct-q4_k_m") == "qwen-coder"
    assert fill_in_family("auto", "gpt-4o-mini") is None
    assert fill_in_family("auto", "Qwen2.5-7B-Instruct") is None  # not a code model: no FIM training
    assert fill_in_family("off", "Qwen2.5-Coder-7B") is None
    assert fill_in_family("qwen-coder", "my-finetune") == "qwen-coder"
    with pytest.raises(ValueError, match="unknown fill-in family"):
        fill_in_family("starcoder", "x")
    with pytest.raises(ValueError, match="llm_fill_in must be one of auto, off, qwen-coder"):
        RepairConfig.from_dict({"llm_fill_in": "yes"})
    # With it off, a code model is asked in chat only.
    with ScriptedOpenAIServer([{"content": f"```python\n{NEW.strip()}\n```", "usage": (5, 5)}]) as server:
        settings = LLMSettings(model="qwen2.5-coder", base_url=server.base_url, backoff_s=0.0, fill_in="off")
        ask = LLMPatcher(
            LLMClient(settings), LLMOptions(region_first=True), LLMBudget(20, 3, 600.0),
            localise=lambda source, rep: [13],
        )
        outcome = ask.propose(request(report={"verdict": "mismatch", "cases": [{"verdict": "mismatch"}]}))
    assert outcome.proposal is not None and [r["_route"] for r in server.requests] == ["/v1/chat/completions"]


def test_a_run_with_fill_in_answers_replays_offline(tmp_path: Path) -> None:
    folder = write_problem(tmp_path / "p", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    script = [
        {"content": OLD + "\n", "usage": (600, 20)},  # filled in as it was
        {"content": "Looks right to me.", "usage": (90, 5)},  # the lines asked about in chat
        {"content": f"The factor is wrong: `{NEW.strip()}`", "usage": (95, 12)},  # the mistake named first
    ]
    with ScriptedOpenAIServer(script) as server:
        config = RepairConfig(
            strategy="llm", base_url=server.base_url, model="qwen2.5-coder-1.5b", workers=1,
            llm_region_first=True, llm_samples=3,
        )
        result = repair(folder, None, config, trace=tmp_path / "t.jsonl", checkpoint_db=tmp_path / "c")
    routes = [r["_route"] for r in server.requests]
    # One answer per round: the region's question forms take turns.
    assert routes == ["/v1/completions"] + ["/v1/chat/completions"] * 2, routes
    assert result.status == "repaired" and result.llm_calls == 3
    assert result.tokens["input"] == sum(r["usage"][0] for r in script[: len(routes)])
    proc = cli("replay", result.trace_path, "--json", env={"HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert json.loads(proc.stdout)["same"]


def test_a_fill_in_reply_is_read_as_the_region_s_own_number_of_code_lines() -> None:
    code = "    y = x * 2.0\n    tl.store(out_ptr + offs, y, mask=mask)"
    text = f"    # scale by two\n\n{code}\n\n@triton.jit\n"  # a preamble, the lines, then code of its own
    assert fill_in_reply(text, Anchor(12, 13, "")) == f"```python\n{code}\n```"
    assert fill_in_reply("\n# nothing\n", Anchor(3, 3, "")) == ""  # no code: no answer


TWINS = """\
def sizes(H, W, KS, stride, pad):
    H_out = (H - KS) // stride + 1
    W_out = (W - KS) // stride + 1
    n = H_out * W_out
    return n
"""


def test_parallel_lines_are_asked_about_together() -> None:
    # Asked to fill in `H_out` with the same bug in `W_out` right below, a real 1.5B model wrote the bug back.
    assert with_twins(TWINS, Anchor(2, 2, "")) == Anchor(2, 3, "")
    assert with_twins(TWINS, Anchor(3, 3, "why")) == Anchor(2, 3, "why")
    assert with_twins(TWINS, Anchor(4, 4, "")) == Anchor(4, 4, "")  # `n = H_out * W_out` has no twin
    report = {"verdict": "mismatch", "cases": [{"name": "seed0", "verdict": "mismatch"}]}
    fixed = "    H_out = (H + 2 * pad - KS) // stride + 1\n    W_out = (W + 2 * pad - KS) // stride + 1\n"
    with ScriptedOpenAIServer([{"content": fixed, "usage": (50, 30)}]) as server:
        settings = LLMSettings(model="qwen2.5-coder", base_url=server.base_url, backoff_s=0.0)
        ask = LLMPatcher(
            LLMClient(settings), LLMOptions(region_first=True), LLMBudget(20, 3, 600.0),
            localise=lambda source, rep: [3, 2],  # the two lines ranked apart: one region
        )
        outcome = ask.propose(request(source=TWINS, report=report))
        [prompt] = server.requests[0]["prompt"]
    assert "H_out = (H" not in prompt and "W_out = (W" not in prompt
    assert outcome.proposal is not None and fixed in outcome.proposal.source
    assert outcome.answers[0]["region"] == [2, 3]
