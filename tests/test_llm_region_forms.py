"""The region-forms benchmark: the true bug lines are asked about in each form as the strategy asks them, and
each answer is judged by `kmedic check` (against the scripted server: the only fake, at the network edge)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_modules import load
from openai_server import ScriptedOpenAIServer
from problems import LIGHT_TOML, OPAQUE_SCALE_REFERENCE, write_problem
from test_llm_strategy import BROKEN, FIXED, NEW, OLD


def test_each_form_is_asked_about_the_true_bug_lines_and_judged(tmp_path: Path) -> None:
    case = write_problem(tmp_path / "corpus" / "scale_01", BROKEN, OPAQUE_SCALE_REFERENCE, LIGHT_TOML)
    (case / "fixed.py").write_text(FIXED)
    script = [
        {"content": NEW + "\n\ndef more(x):\n", "usage": (500, 20)},  # fill-in: the fix, then more code
        {"content": f"```python\n{OLD.strip()}\n```", "usage": (90, 9)},  # chat: the line given back
    ]
    out = tmp_path / "forms.json"
    with ScriptedOpenAIServer(script) as server:
        args = ["--base-url", server.base_url, "--model", "qwen2.5-coder-1.5b", "--every", "1"]
        args += ["--corpus", str(tmp_path / "corpus"), "--temperatures", "0", "--out", str(out)]
        code = load("llm_region_forms").main(args)
        [fill, chat] = server.requests
    assert code == 0
    assert fill["_route"] == "/v1/completions" and OLD not in fill["prompt"][0]
    assert OLD in chat["messages"][1]["content"]  # the chat question shows the lines
    rows = {r["form"]: r for r in json.loads(out.read_text())}
    fill_in = rows["fill_in"]
    assert (fill_in["passing"], fill_in["matching"], fill_in["unchanged"]) == (1, 1, 0)
    assert (rows["lines"]["passing"], rows["lines"]["unchanged"]) == (0, 1)
    assert rows["fill_in"]["input_tokens"] == 500
