"""diagnose: ranked bug-class hypotheses from the best version's report, its code and the probe findings.

Offline first; with an LLM configured (strategy llm or hybrid, and KMEDIC_LLM_DIAGNOSIS=1), the LLM
re-ranks and annotates the same hypotheses from the same evidence; a malformed answer changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernel_medic.graph.runtime import chat_model_for, config_of, traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis.hypotheses import BUG_CLASSES, hypotheses, refine
from kernel_medic.tools.repair.llm import LLMError, LLMSettings, render_prompt
from kernel_medic.tools.repair.spec_checks import spec_hypotheses
from kernel_medic.tools.trace import append_event


def _probe_findings(state: RepairState) -> list[dict[str, Any]]:
    return [f for f in state.get("instrumentation") or [] if "supports" in f or "refutes" in f]


# Opt-in until RepairConfig carries a setting for it: an extra LLM call per diagnosis would change the
# request sequence existing scripted and replayed runs expect.


def _llm_wanted(state: RepairState) -> bool:
    config = config_of(state)
    if not config.llm_diagnosis:
        return False
    if config.strategy not in ("llm", "hybrid"):
        return False
    if config.llm_replay:
        return True
    return LLMSettings.from_env(model=config.model, base_url=config.base_url).configured()


@traced("diagnose")
def diagnose(state: RepairState) -> dict[str, Any]:
    report = state.get("best_report") or {}
    source = state.get("best_source") or state.get("original_source")
    filename = Path(state.get("candidate_path") or "candidate.py").name
    findings = _probe_findings(state)
    ranked = hypotheses(report, source, findings, filename=filename)
    if report.get("verdict") not in (None, "pass"):
        # Arguments the reference honours that the candidate never mentions: a hypothesis of their own.
        ranked += spec_hypotheses(state.get("reference_source") or "", source or "")
    delta: dict[str, Any] = {"diagnosis": ranked}
    if not _llm_wanted(state):
        return delta
    config = config_of(state)
    trace_path = state.get("trace_path")
    messages = [
        {
            "role": "user",
            "content": render_prompt(
                "diagnose",
                bug_classes=", ".join(BUG_CLASSES),
                reference_source=state.get("reference_source", ""),
                candidate_source=_numbered(source or ""),
                filename=filename,
                symptoms="\n".join(f"- {s}" for s in report.get("symptoms") or []) or "- (none recorded)",
                findings="\n".join(f"- {json.dumps(f, sort_keys=True, default=str)}" for f in findings[-8:])
                or "- (none yet)",
                hypotheses=json.dumps(ranked[:8], indent=1),
            ),
        }
    ]
    append_event(trace_path, "llm_request", messages=messages)
    try:
        reply = chat_model_for(config, trace_path).complete(messages)
    except LLMError as exc:
        delta["error"] = f"llm_error: {exc}"
        return delta
    append_event(
        trace_path,
        "llm_response",
        text=reply.text,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        attempts=reply.attempts,
        wall_s=round(reply.wall_s, 3),
        model=reply.model,
    )
    delta.update(
        diagnosis=refine(ranked, reply.text),
        llm_calls=1,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
    )
    return delta


def _numbered(source: str) -> str:
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))
