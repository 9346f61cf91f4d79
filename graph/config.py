"""Repair configuration: explicit values win, then KMEDIC_*/OPENAI_* environment variables, then defaults."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from kernel_medic.tools.repair.fill_in import FILL_IN_CHOICES

Strategy = Literal["offline", "llm", "hybrid"]
STRATEGIES: tuple[Strategy, ...] = ("offline", "llm", "hybrid")


@dataclass(frozen=True)
class RepairConfig:
    strategy: Strategy = "offline"
    """How patches are proposed: offline rewrite rules, an LLM, or offline first and the LLM on stagnation."""
    device: str = "cpu"
    """Where kernels run: cpu (Triton interpreter), cuda, npu, or auto."""
    max_iterations: int = 12
    """Patch-and-verify rounds before giving up."""
    max_llm_calls: int = 20
    """LLM requests before giving up (retries of one request count once)."""
    max_tokens: int = 200_000
    """Input plus output tokens before giving up."""
    wall_budget_s: float = 200.0
    """Wall-clock seconds of graph work before giving up (a resumed run keeps counting; checked between nodes,
    so with one patch node's screening on top a run stays under 5 minutes)."""
    no_progress_limit: int = 6
    """Stop after this many patches in a row without a better score."""
    max_backtracks: int = 1
    """Times a run goes back to the version before its best when nothing gains from the best (0: never)."""
    patches_per_hypothesis: int = 6
    """Patches tried for one hypothesis before it is set aside."""
    localise: bool = True
    """Offline search: rank statements from recorded intermediates and the report before the edit space."""
    llm_diagnosis: bool = False
    """With an LLM strategy, the LLM also re-ranks the offline hypotheses (one more call per diagnosis)."""
    edit_retries: int = 2
    """Times a malformed or non-applying LLM edit is fed back before the patch counts as failed."""
    regeneration_fraction: float = 0.6
    """A patch that changes more than this share of the kernel's lines is regeneration, not a repair."""
    unreached_findings: str = "warn"
    """An integrity finding the candidate already had, on code the problem never runs: warn or reject."""
    workers: int | None = None
    """Sandboxed evaluation workers (default: CPU count)."""
    model: str = "gpt-4o-mini"
    """LLM model name (KMEDIC_MODEL or OPENAI_MODEL)."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (OPENAI_BASE_URL); the API key is read from OPENAI_API_KEY, never stored."""
    kb_path: str | None = None
    """Knowledge-base (Chroma) directory (KMEDIC_KB_PATH; default: the data directory's kb/)."""
    llm_replay: str | None = None
    """A trace whose recorded LLM responses stand in for the LLM (replay; no network)."""
    tolerance: str | None = None
    """How outputs are judged, overriding problem.toml: strict, kernelbench, or ATOL,RTOL."""
    llm_timeout_s: float = 120.0
    """Seconds one LLM request may take before it is retried (KMEDIC_LLM_TIMEOUT_S)."""
    llm_samples: int = 1
    """Answers asked for per LLM round (one by one unless llm_parallel_samples); the best is verified."""
    llm_retry_temperature: float = 0.7
    """Sampling temperature of retries and extra samples (the first answer uses temperature 0)."""
    llm_max_output_tokens: int = 1536
    """Cap on one LLM reply's tokens (a whole corrected file fits; a runaway reply does not)."""
    llm_prompt_tokens: int | None = None
    """Prompt token budget; default: the server's reported context (else 8192) minus llm_max_output_tokens."""
    llm_no_edit_limit: int = 3
    """Stop after this many LLM rounds in a row whose answers held no applicable edit (stop: llm_no_edit)."""
    llm_pattern_min_score: float = 0.25
    """Knowledge-base patterns below this retrieval score are left out of the LLM prompt."""
    llm_region_first: bool = False
    """Ask first about the few lines the evidence suspects, not the whole file (suits small models)."""
    llm_parallel_samples: bool = False
    """Ask a round's samples at once (a server that serves several requests at a time); otherwise one by
    one, and the round ends when an answer repeats an earlier one (a hotter sample rarely says more)."""
    llm_regions: int = 6
    """Suspect statements the region questions go through (most suspect first) before one is asked again."""
    llm_fill_in: str = "auto"
    """Also ask a region as fill-in-the-middle (completions endpoint): a template family, off, or auto
    (by model name: Qwen2.5-Coder)."""

    @classmethod
    def from_env(cls, **overrides: Any) -> RepairConfig:
        env: dict[str, Any] = {}
        for f in fields(cls):
            raw = os.environ.get(f"KMEDIC_{f.name.upper()}")
            if raw is not None:
                env[f.name] = _parse(f.name, raw)
        if "model" not in env and os.environ.get("OPENAI_MODEL"):
            env["model"] = os.environ["OPENAI_MODEL"]
        if "base_url" not in env and os.environ.get("OPENAI_BASE_URL"):
            env["base_url"] = os.environ["OPENAI_BASE_URL"]
        env.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(env)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RepairConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown repair setting(s): {', '.join(sorted(unknown))}")
        config = cls(**data)
        if config.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {config.strategy!r}: expected offline, llm or hybrid")
        _check_limits(config)
        return config

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_AT_LEAST_ONE = (
    "max_iterations",
    "max_llm_calls",
    "max_tokens",
    "no_progress_limit",
    "patches_per_hypothesis",
    "llm_samples",
    "llm_no_edit_limit",
    "llm_regions",
    "llm_max_output_tokens",
)


def _check_limits(config: RepairConfig) -> None:
    """A zero or negative budget would end (or never end) every run for a reason nobody asked for."""
    for name in _AT_LEAST_ONE:
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(config, name)}")
    for name in ("wall_budget_s", "llm_timeout_s"):
        if not getattr(config, name) > 0:
            raise ValueError(f"{name} must be positive, got {getattr(config, name)}")
    if config.max_backtracks < 0:
        raise ValueError(f"max_backtracks must be at least 0, got {config.max_backtracks}")
    if config.edit_retries < 0:
        raise ValueError(f"edit_retries must be at least 0, got {config.edit_retries}")
    if config.workers is not None and config.workers < 1:
        raise ValueError(f"workers must be at least 1, got {config.workers}")
    if config.llm_prompt_tokens is not None and config.llm_prompt_tokens < 256:
        raise ValueError(f"llm_prompt_tokens must be at least 256, got {config.llm_prompt_tokens}")
    if config.llm_fill_in not in FILL_IN_CHOICES:
        choices = ", ".join(FILL_IN_CHOICES)
        raise ValueError(f"llm_fill_in must be one of {choices}, got {config.llm_fill_in!r}")
    if not 0.0 < config.regeneration_fraction <= 1.0:
        raise ValueError(f"regeneration_fraction must be in (0, 1], got {config.regeneration_fraction}")


def _parse(name: str, raw: str) -> Any:
    kind = {f.name: f.type for f in fields(RepairConfig)}[name]
    if "int" in str(kind) and "None" not in str(kind):
        return int(raw)
    if "float" in str(kind):
        return float(raw)
    if name in ("workers", "llm_prompt_tokens"):
        return int(raw) if raw else None
    if "bool" in str(kind):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return raw
