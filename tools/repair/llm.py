"""A small, counted LLM client over any OpenAI-compatible chat endpoint (vLLM, SGLang, Ollama, hosted).

``ChatOpenAI`` does the HTTP; its own retries are off so that this module decides what is retried
(timeouts, connection errors, HTTP 5xx), how long it waits, and how many attempts a reply cost.
A plain ``invoke`` sends a non-streaming request; inside a LangGraph run streamed with
``stream_mode="messages"`` the same call streams, and ``stream_usage=True`` keeps the token usage then.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from kernel_medic.tools.repair.fill_in import FILL_IN_STOPS, fill_in_family
from kernel_medic.tools.trace import Recording, read_trace

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_API_KEY = "not-needed"  # local servers ignore the key, but the client insists on one


@dataclass(frozen=True)
class LLMSettings:
    """Which endpoint and model to ask, and how patiently."""

    model: str = "gpt-4o-mini"
    """Model name as the server knows it."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. ``http://localhost:8000/v1``; None means api.openai.com."""
    api_key: str | None = None
    """API key; optional when ``base_url`` points at a local server."""
    temperature: float = 0.0
    """Sampling temperature; 0 keeps repairs as reproducible as the server allows."""
    timeout_s: float = 120.0
    """Per-attempt timeout in seconds."""
    max_retries: int = 3
    """Retries after the first try, on timeouts, connection errors and HTTP 5xx only."""
    backoff_s: float = 1.0
    """Delay before the first retry; doubles each time."""
    max_output_tokens: int | None = None
    """Cap on a reply's tokens (the request's max_tokens); None leaves it to the server."""
    fill_in: str = "auto"
    """Fill-in-the-middle questions (completions endpoint): a template family, "off", or "auto" (by name)."""

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMSettings:
        """Settings from OPENAI_BASE_URL, OPENAI_API_KEY, KMEDIC_MODEL (else OPENAI_MODEL).

        Explicit ``overrides`` that are not None win; an unknown name is a TypeError.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise TypeError(f"unknown LLM setting(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        env = {
            "base_url": os.environ.get("OPENAI_BASE_URL"),
            "api_key": os.environ.get("OPENAI_API_KEY"),
            "model": os.environ.get("KMEDIC_MODEL") or os.environ.get("OPENAI_MODEL"),
        }
        values.update({k: v for k, v in env.items() if v})
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def configured(self) -> bool:
        """True when an api key or a base url is set, i.e. a request can be attempted."""
        return bool(self.api_key or self.base_url)


@dataclass
class LLMReply:
    """One successful completion and what it cost."""

    text: str
    input_tokens: int
    output_tokens: int
    attempts: int
    wall_s: float
    model: str
    lost_input_tokens: int = 0
    """Prompt tokens of earlier attempts that timed out: the server processed them, the usage never came
    back, so they are estimated from the prompt's length."""


class LLMError(RuntimeError):
    """The request failed after retries, or cannot be made; str() is one line."""

    lost_input_tokens: int = 0  # estimated prompt tokens of attempts that timed out (the server did the work)
    wall_s: float = 0.0  # time spent on the failed attempts


def estimate_prompt_tokens(messages: list[dict[str, str]]) -> int:
    """A prompt's tokens when the server reports none (a timed-out request): ~3.2 characters per token."""
    return int(sum(len(m.get("content", "")) for m in messages) / 3.2) + 4 * len(messages)


class LLMClient:
    """Sends chat messages, retrying transient failures with exponential backoff."""

    def __init__(self, settings: LLMSettings) -> None:
        if not settings.configured():
            raise LLMError("no LLM endpoint configured: set OPENAI_API_KEY and/or OPENAI_BASE_URL")
        if settings.max_retries < 0 or settings.timeout_s <= 0 or settings.backoff_s < 0:
            raise LLMError("LLM settings need max_retries >= 0, timeout_s > 0 and backoff_s >= 0")
        from langchain_openai import ChatOpenAI  # heavy import, paid only when an LLM is really used

        self.settings = settings
        self._chat = ChatOpenAI(
            model=settings.model,
            # explicit, so that ambient OPENAI_* variables cannot redirect a client built from settings
            base_url=settings.base_url or DEFAULT_BASE_URL,
            api_key=settings.api_key or PLACEHOLDER_API_KEY,
            temperature=settings.temperature,
            timeout=settings.timeout_s,
            max_retries=0,
            stream_usage=True,
            max_tokens=settings.max_output_tokens,
        )
        # langchain sends the cap as `max_completion_tokens`, which llama.cpp's server (and other
        # OpenAI-compatible servers) ignore: a server not OpenAI's own gets `max_tokens` as well.
        self._legacy_cap = (settings.base_url or DEFAULT_BASE_URL).rstrip("/") != DEFAULT_BASE_URL.rstrip("/")
        self._context: int | None | bool = False  # False: not asked yet
        try:
            self._family = fill_in_family(settings.fill_in, settings.model)
        except ValueError as exc:
            raise LLMError(str(exc)) from None
        self._fill: Any = None  # the completions client, made on first use

    def context_window(self) -> int | None:
        """The model's context length when the server reports it (vLLM, SGLang, llama.cpp); else None."""
        if self._context is not False:
            return self._context  # type: ignore[return-value]
        self._context = None
        base = (self.settings.base_url or DEFAULT_BASE_URL).rstrip("/")
        try:
            key = self.settings.api_key or PLACEHOLDER_API_KEY
            reply = httpx.get(
                f"{base}/models",
                timeout=min(5.0, self.settings.timeout_s),
                headers={"Authorization": f"Bearer {key}"},
            )
            models = reply.json().get("data") or []
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        for entry in models if isinstance(models, list) else []:
            if not isinstance(entry, dict):
                continue
            meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
            for key in ("max_model_len", "context_length", "context_window", "n_ctx", "max_context_length"):
                value = entry.get(key, meta.get(key))
                if isinstance(value, int) and value > 0:
                    self._context = value
                    return value
        return None

    def fill_in_family(self) -> str | None:
        """The fill-in-the-middle template family this model takes (None: chat questions only)."""
        return self._family

    def fill_in(
        self, prompt: str, temperature: float | None = None, max_tokens: int | None = None
    ) -> LLMReply:
        """One completion of a fill-in-the-middle `prompt` (made from FILL_IN_TEMPLATES[fill_in_family()])
        over the completions endpoint, retried and counted like a chat completion; the text is the middle."""
        if self._family is None:
            model, setting = self.settings.model, self.settings.fill_in
            raise LLMError(f"model {model!r} has no fill-in template (setting {setting!r})")
        if self._fill is None:
            from langchain_openai import OpenAI

            self._fill = OpenAI(
                model=self.settings.model,
                base_url=self.settings.base_url or DEFAULT_BASE_URL,
                api_key=self.settings.api_key or PLACEHOLDER_API_KEY,
                temperature=self.settings.temperature,
                timeout=self.settings.timeout_s,
                max_retries=0,
            )
        extra: dict[str, Any] = {"stop": FILL_IN_STOPS[self._family]}
        if temperature is not None:
            extra["temperature"] = temperature
        cap = max_tokens if max_tokens is not None else self.settings.max_output_tokens
        if self.settings.max_output_tokens is not None and cap is not None:
            cap = min(cap, self.settings.max_output_tokens)
        extra["max_tokens"] = cap if cap is not None else 256

        def call() -> tuple[str, int, int, str]:
            result = self._fill.generate([prompt], **extra)
            usage = (result.llm_output or {}).get("token_usage") or {}
            model = (result.llm_output or {}).get("model_name") or self.settings.model
            text = result.generations[0][0].text if result.generations and result.generations[0] else ""
            return text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), model

        return self._with_retries(call, estimate_prompt_tokens([{"content": prompt}]))

    def complete(
        self,
        messages: list[dict[str, str]],
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        """One chat completion; LLMError after the last failed attempt or on a non-retryable error.

        `temperature` overrides the settings' for this request (retries vary their sampling); `max_tokens`
        lowers its reply cap (a question about three lines needs no 1,536-token answer)."""
        for message in messages:
            if message.get("role") not in ("system", "user", "assistant") or "content" not in message:
                shown = repr(message)[:120]
                raise LLMError(f"bad chat message (need role system|user|assistant and content): {shown}")
        extra: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
        cap = self.settings.max_output_tokens
        if max_tokens is not None:
            cap = min(max_tokens, cap or max_tokens)
            extra["max_tokens"] = cap
        if cap is not None and self._legacy_cap:
            extra["extra_body"] = {"max_tokens": cap}

        def call() -> tuple[str, int, int, str]:
            result = self._chat.invoke(messages, **extra)
            usage = result.usage_metadata or {}
            model = result.response_metadata.get("model_name") or self.settings.model
            return (
                _text(result.content),
                int(usage.get("input_tokens", 0)),
                int(usage.get("output_tokens", 0)),
                str(model),
            )

        return self._with_retries(call, estimate_prompt_tokens(messages))

    def _with_retries(self, call: Callable[[], tuple[str, int, int, str]], prompt_tokens: int) -> LLMReply:
        """`call` (text, input tokens, output tokens, model) retried on transient failures with backoff."""
        attempts_allowed = self.settings.max_retries + 1
        start = time.monotonic()
        delay = self.settings.backoff_s
        lost = 0
        for attempt in range(1, attempts_allowed + 1):
            try:
                text, tokens_in, tokens_out, model = call()
            except Exception as exc:  # classified below; anything else is re-raised
                retryable, reason = _classify(exc)
                if reason is None:
                    raise
                if reason == "timed out":
                    lost += prompt_tokens
                if not retryable or attempt == attempts_allowed:
                    plural = "attempt" if attempt == 1 else "attempts"
                    error = LLMError(f"LLM request failed after {attempt} {plural}: {reason}")
                    error.lost_input_tokens = lost
                    error.wall_s = time.monotonic() - start
                    raise error from exc
                time.sleep(delay)
                delay *= 2
                continue
            return LLMReply(
                text=text,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                attempts=attempt,
                wall_s=time.monotonic() - start,
                model=model,
                lost_input_tokens=lost,
            )
        raise AssertionError("unreachable: the loop returns or raises")


def _classify(exc: BaseException) -> tuple[bool, str | None]:
    """(retryable, one-line reason); reason None means the error is not a request failure at all."""
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        return True, "timed out"
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return True, f"connection error: {_one_line(str(exc))}"
    if isinstance(exc, openai.APIStatusError):
        message = re.sub(r"^Error code: \d+ - ", "", _one_line(str(exc)))
        # 429 is a rate limit: hosted endpoints send it routinely and it clears with backoff, like a 5xx.
        return exc.status_code >= 500 or exc.status_code == 429, f"HTTP {exc.status_code}: {message}"
    if isinstance(exc, openai.OpenAIError):
        return False, _one_line(f"{type(exc).__name__}: {exc}")
    return False, None


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _text(content: Any) -> str:
    """A reply's text; some servers answer with a list of content parts instead of a string."""
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else p.get("text", "") for p in content if isinstance(p, str | dict)]
    return "".join(parts)


class _Fields(dict):
    def __init__(self, prompt: str, fields: dict[str, Any]) -> None:
        super().__init__(fields)
        self._prompt = prompt

    def __missing__(self, key: str) -> Any:
        raise KeyError(f"prompt {self._prompt!r} needs the field {key!r}")


def render_prompt(name: str, **fields: Any) -> str:
    """prompts/<name>.md (package kernel_medic.prompts) with ``fields`` filled in by ``str.format_map``."""
    template = importlib.resources.files("kernel_medic.prompts").joinpath(f"{name}.md").read_text("utf-8")
    return template.format_map(_Fields(name, fields))


class RecordedChatModel(Recording):
    """Serves a trace's recorded LLM responses in order; one shared cursor per trace within a process."""

    def __init__(self, trace_path: str) -> None:
        super().__init__(trace_path)
        events = read_trace(trace_path)
        self.responses = [e for e in events if e["event"] == "llm_response"]
        asked = [e for e in events if e["event"] == "llm_request" and e.get("fill_in")]
        self.family: str | None = asked[0]["fill_in"] if asked else None

    def complete(
        self,
        messages: list[dict[str, str]],
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        with self._lock:
            if self.cursor >= len(self.responses):
                raise LLMError(f"replay: {self.trace_path} has no more recorded LLM responses")
            event = self.responses[self.cursor]
            self.cursor += 1
        return LLMReply(
            text=event["text"],
            input_tokens=int(event.get("input_tokens", 0)),
            output_tokens=int(event.get("output_tokens", 0)),
            attempts=int(event.get("attempts", 1)),
            wall_s=0.0,
            model=str(event.get("model", "recorded")),
            lost_input_tokens=int(event.get("lost_input_tokens", 0)),
        )

    def fill_in(
        self, prompt: str, temperature: float | None = None, max_tokens: int | None = None
    ) -> LLMReply:
        return self.complete([], temperature, max_tokens)  # the recorded middle, in its turn

    def fill_in_family(self) -> str | None:
        """The family the original run filled in with: its questions are asked again in the same order."""
        return self.family

    def context_window(self) -> int | None:
        return None  # a replay never asks the server; the recorded prompts were sized by the original run
