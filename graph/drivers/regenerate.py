"""The Regenerate baseline: spend the budget asking the LLM for a fresh kernel from the reference alone.

This is what a pipeline does with a near-miss when it has no debugger: throw it away and try again. Every
attempt is judged exactly like a repair (full tier, then the integrity checks), so Debug and Regenerate are
compared side by side on the same footing, as in the paper behind this project.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import Problem
from kernel_medic.tools.integrity.gate import audit
from kernel_medic.tools.repair.llm import LLMError, render_prompt
from kernel_medic.tools.repair.patchers import ChatModel

_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


@dataclass
class RegenerateOutcome:
    status: str  # repaired (a fresh kernel passed and is clean) | unrepaired
    attempts: int
    llm_calls: int
    tokens: int
    wall_s: float
    score: float  # best full-tier score among the attempts
    first_success: int = 0  # the attempt (1-based) that succeeded; 0 when none did
    error: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    llm_wall_s: float = 0.0  # time spent waiting for the LLM

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def extract_code(text: str) -> str | None:
    """The first fenced code block of an answer, or None."""
    match = _CODE_BLOCK.search(text)
    return match.group(1) if match else None


def regenerate(problem: Problem, model: ChatModel, evaluator: Evaluator, attempts: int) -> RegenerateOutcome:
    start = time.monotonic()
    outcome = RegenerateOutcome("unrepaired", 0, 0, 0, 0.0, 0.0)
    failures: list[str] = []
    for _ in range(attempts):
        outcome.attempts += 1
        messages = [
            {"role": "system", "content": render_prompt("regenerate_system")},
            {
                "role": "user",
                "content": render_prompt(
                    "regenerate_user",
                    problem_name=problem.name,
                    reference_source=problem.reference_source,
                    failed_attempts="\n".join(failures) or "(none)",
                ),
            },
        ]
        try:
            reply = model.complete(messages)
        except LLMError as exc:
            outcome.error = str(exc)
            break
        outcome.llm_calls += 1
        outcome.tokens += reply.input_tokens + reply.output_tokens
        outcome.input_tokens += reply.input_tokens
        outcome.output_tokens += reply.output_tokens
        outcome.llm_wall_s = round(outcome.llm_wall_s + reply.wall_s, 3)
        source = extract_code(reply.text)
        if source is None:
            failures.append(f"- attempt {outcome.attempts}: the answer held no code block")
            continue
        report = evaluator.evaluate(problem.with_candidate(source), tier="full")
        outcome.score = max(outcome.score, report.score)
        # The same gate as a repair: a fresh kernel that passes must also pass the full audit.
        if report.passed and audit(problem.with_candidate(source), evaluator).verdict == "clean":
            outcome.status, outcome.first_success = "repaired", outcome.attempts
            break
        failures.append(f"- attempt {outcome.attempts}: {report.verdict}, score {report.score:.4f}")
    outcome.wall_s = round(time.monotonic() - start, 3)
    return outcome
