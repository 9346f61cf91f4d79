"""The LLM client: the real ChatOpenAI over HTTP, against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import socket
import string
import time
from importlib.resources import files
from typing import TypedDict

import pytest
from kernel_medic.tools.repair.edits import parse_search_replace
from kernel_medic.tools.repair.llm import LLMClient, LLMError, LLMSettings, render_prompt
from openai_server import ScriptedOpenAIServer

MESSAGES = [{"role": "system", "content": "You fix kernels."}, {"role": "user", "content": "Fix the mask."}]
ANSWER = "<<<<<<< SEARCH\n    mask = offs < n - 1\n=======\n    mask = offs < n\n>>>>>>> REPLACE\n"


def settings(server: ScriptedOpenAIServer, **kw: float | int | str) -> LLMSettings:
    """A local server needs no api key: none is given."""
    base = {"model": "qwen-coder", "base_url": server.base_url, "timeout_s": 5.0, "backoff_s": 0.01}
    return LLMSettings(**{**base, **kw})  # type: ignore[arg-type]


def test_reply_text_and_usage_are_counted() -> None:
    with ScriptedOpenAIServer([{"content": ANSWER, "usage": (321, 45)}]) as server:
        reply = LLMClient(settings(server)).complete(MESSAGES)
    assert reply.text == ANSWER
    assert (reply.input_tokens, reply.output_tokens) == (321, 45)
    assert (reply.attempts, reply.model) == (1, "qwen-coder")
    assert 0 < reply.wall_s < 5
    [body] = server.requests
    assert body["model"] == "qwen-coder" and body["temperature"] == 0.0
    assert [{"role": m["role"], "content": m["content"]} for m in body["messages"]] == MESSAGES


def test_the_reply_cap_reaches_a_server_that_reads_only_max_tokens() -> None:
    # langchain sends `max_completion_tokens`, which llama.cpp's server ignores (a real one went on for 176
    # tokens under a cap of 8): a server not OpenAI's own gets `max_tokens` too; a request may lower it.
    script = [{"content": "ok", "usage": (5, 1)}] * 2
    with ScriptedOpenAIServer(script) as server:
        client = LLMClient(settings(server, max_output_tokens=1536))
        client.complete(MESSAGES)
        client.complete(MESSAGES, max_tokens=300)
    caps = [(b["max_tokens"], b["max_completion_tokens"]) for b in server.requests]
    assert caps == [(1536, 1536), (300, 300)]


def test_usage_survives_streaming_inside_a_langgraph_messages_stream() -> None:
    # under stream_mode="messages" (as `langgraph dev` / Studio runs it) the same invoke streams over SSE
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        tokens: list[int]

    with ScriptedOpenAIServer([{"content": ANSWER, "usage": (200, 17)}]) as server:
        client = LLMClient(settings(server))

        def ask(state: State) -> State:
            reply = client.complete(MESSAGES)
            assert reply.text == ANSWER
            return {"tokens": [reply.input_tokens, reply.output_tokens]}

        builder = StateGraph(State)
        builder.add_node("ask", ask)
        builder.add_edge(START, "ask")
        builder.add_edge("ask", END)
        events = list(builder.compile().stream({"tokens": []}, stream_mode=["messages", "values"]))
    assert events[-1] == ("values", {"tokens": [200, 17]})
    assert any(kind == "messages" for kind, _ in events)
    [body] = server.requests
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_a_server_error_is_retried() -> None:
    with ScriptedOpenAIServer([{"status": 500}, {"content": "ok", "usage": (5, 1)}]) as server:
        reply = LLMClient(settings(server)).complete(MESSAGES)
    assert (reply.text, reply.attempts, reply.input_tokens) == ("ok", 2, 5)
    assert len(server.requests) == 2


def test_persistent_server_errors_give_up_after_max_retries_with_backoff() -> None:
    with ScriptedOpenAIServer([{"status": 503, "message": "overloaded"}] * 5) as server:
        client = LLMClient(settings(server, max_retries=3, backoff_s=0.05))
        start = time.monotonic()
        with pytest.raises(LLMError) as info:
            client.complete(MESSAGES)
        elapsed = time.monotonic() - start
    assert str(info.value) == "LLM request failed after 4 attempts: HTTP 503: overloaded"
    assert len(server.requests) == 4
    assert elapsed >= 0.05 + 0.1 + 0.2  # the delay doubles between attempts


def test_a_slow_reply_times_out_and_is_retried() -> None:
    script = [{"delay_s": 2.0, "content": "late"}, {"content": "on time", "usage": (3, 2)}]
    with ScriptedOpenAIServer(script) as server:
        reply = LLMClient(settings(server, timeout_s=0.5)).complete(MESSAGES)
    assert (reply.text, reply.attempts) == ("on time", 2)


def test_persistently_slow_replies_raise_after_the_retries() -> None:
    with ScriptedOpenAIServer([{"delay_s": 2.0, "content": "late"}] * 2) as server:
        client = LLMClient(settings(server, timeout_s=0.5, max_retries=1))
        start = time.monotonic()
        with pytest.raises(LLMError, match=r"^LLM request failed after 2 attempts: timed out$"):
            client.complete(MESSAGES)
        assert time.monotonic() - start < 1.9  # gave up on each try at the timeout, not at the reply
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(status: int) -> None:
    with ScriptedOpenAIServer([{"status": status}, {"content": "never served"}]) as server:
        with pytest.raises(LLMError, match=rf"^LLM request failed after 1 attempt: HTTP {status}: "):
            LLMClient(settings(server)).complete(MESSAGES)
    assert len(server.requests) == 1


def test_rate_limits_are_retried() -> None:
    with ScriptedOpenAIServer([{"status": 429}, {"content": "after the wait", "usage": (1, 1)}]) as server:
        reply = LLMClient(settings(server)).complete(MESSAGES)
    assert (reply.text, reply.attempts) == ("after the wait", 2)


def test_connection_errors_are_retried() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LLMClient(LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_s=0.01))
    with pytest.raises(LLMError, match=r"^LLM request failed after 2 attempts: connection error"):
        client.complete(MESSAGES)


def test_an_exhausted_script_fails_visibly() -> None:
    with ScriptedOpenAIServer([]) as server:
        with pytest.raises(LLMError, match="script exhausted"):
            LLMClient(settings(server, max_retries=0)).complete(MESSAGES)


def test_scripted_server_lists_models() -> None:
    import httpx

    with ScriptedOpenAIServer([]) as server:
        models = httpx.get(f"{server.base_url}/models", timeout=5).json()
    assert models["data"][0]["id"] == "scripted-model"


def test_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "KMEDIC_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert LLMSettings.from_env() == LLMSettings()
    assert not LLMSettings.from_env().configured()
    with pytest.raises(LLMError, match="no LLM endpoint configured"):
        LLMClient(LLMSettings.from_env())

    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("OPENAI_MODEL", "generic-model")
    s = LLMSettings.from_env()
    assert (s.base_url, s.api_key, s.model) == ("http://gpu-box:8000/v1", None, "generic-model")
    assert s.configured()

    monkeypatch.setenv("KMEDIC_MODEL", "kernel-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    s = LLMSettings.from_env(model=None, temperature=0.3, base_url="http://other:1/v1")
    assert (s.model, s.api_key, s.temperature, s.base_url) == ("kernel-model", "sk-test", 0.3, "http://other:1/v1")
    with pytest.raises(TypeError, match="tempreature"):
        LLMSettings.from_env(tempreature=0.3)


PATCH_USER_FIELDS = {
    "problem_name": "19_ReLU", "reference_source": "REF-SOURCE", "semantics": "relu: max(x, 0)",
    "candidate_source": "CAND-SOURCE",
    "verdict": "mismatch", "score": "0.97", "symptoms": "errors in the tail block",
    "diagnosis": "mask off by one", "anchors": "line 12 looks like", "patterns": "tail-mask-off-by-one",
    "instrumentation": "first divergence at 1023",
    "failed_attempts": "none yet", "feedback": "block 1 not found",
}


def test_patch_user_prompt_has_exactly_the_documented_fields() -> None:
    template = files("kernel_medic.prompts").joinpath("patch_user.md").read_text("utf-8")
    used = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    assert used == set(PATCH_USER_FIELDS)
    text = render_prompt("patch_user", **PATCH_USER_FIELDS)
    for value in PATCH_USER_FIELDS.values():
        assert value in text


def test_render_prompt_names_a_missing_field() -> None:
    fields = {k: v for k, v in PATCH_USER_FIELDS.items() if k != "diagnosis"}
    with pytest.raises(KeyError, match="diagnosis"):
        render_prompt("patch_user", **fields)


def test_patch_system_prompt_shows_a_block_our_parser_accepts() -> None:
    text = render_prompt("patch_system")
    assert "SMALLEST" in text and "torch" in text
    [block] = parse_search_replace(text)
    assert block.search.strip() and block.replace.strip()


def test_malformed_messages_are_refused_before_any_request() -> None:
    with ScriptedOpenAIServer([{"content": "unused"}]) as server:
        with pytest.raises(LLMError, match="bad chat message"):
            LLMClient(settings(server)).complete([{"role": "tool", "content": "x"}])
    assert server.requests == []
