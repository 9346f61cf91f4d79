"""distill: turn a verified, audited repair into a failure pattern the next similar case can retrieve.

The pattern goes into the knowledge base unless a near-identical one is there already (same bug class and
symptom signature, and a very similar fix or description): then that one's acceptance count goes up instead.
Retrieved patterns whose rules produced the fix are credited with an accepted fix.
"""

from __future__ import annotations

import difflib
import logging
from typing import Any

from kernel_medic.graph.runtime import config_of, traced
from kernel_medic.graph.state import RepairState
from kernel_medic.nodes.retrieve import diagnosis_text, knowledge_base
from kernel_medic.tools.diagnosis.hypotheses import evidence
from kernel_medic.tools.repair.edits import unified_diff
from kernel_medic.tools.repair.rules.registry import RULES
from kernel_medic.tools.trace import source_hash
from kernel_medic.vectordb.embedding import embed
from kernel_medic.vectordb.features import infer_category
from kernel_medic.vectordb.pattern import Pattern
from kernel_medic.vectordb.store import KnowledgeBase

log = logging.getLogger(__name__)
SAME_DIFF = 0.8  # difflib ratio of the changed lines above which two fixes are the same fix
SAME_TEXT = 0.95  # cosine similarity of pattern texts above which two patterns say the same thing


def _changed_lines(diff: str) -> str:
    return "\n".join(
        line[1:].strip()
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def _near_duplicate(kb: KnowledgeBase, new: Pattern, diff: str) -> Pattern | None:
    for old in kb.list(new.categories[0]):
        if old.id == new.id:
            return old
        if old.bug_class != new.bug_class or set(old.symptoms) != set(new.symptoms):
            continue
        old_diff = unified_diff(old.example_before, old.example_after) if old.example_before else ""
        ratio = difflib.SequenceMatcher(None, _changed_lines(old_diff), _changed_lines(diff)).ratio()
        if ratio >= SAME_DIFF:
            return old
        a, b = embed([old.search_text(), new.search_text()])
        if sum(x * y for x, y in zip(a, b, strict=True)) >= SAME_TEXT:
            return old
    return None


def _store(state: RepairState, pattern: dict[str, Any], fixes: list[dict[str, Any]]) -> dict[str, Any]:
    """Add (or merge) the distilled pattern; credit the retrieved patterns whose rules made the fix."""
    kb = knowledge_base(state)
    rules = [r for r in pattern["rules"] if r in RULES]
    hypotheses = state.get("diagnosis") or []
    bug_class = pattern["bug_classes"][0] if pattern["bug_classes"] else "unknown"
    what = "; ".join(a["description"] for a in fixes) or "repaired"
    new = Pattern(
        id=pattern["id"],
        title=pattern["title"] or what,
        categories=[infer_category(state.get("reference_source", "")) or "elementwise"],
        bug_class=bug_class,
        symptoms=list(pattern["symptoms"]),
        explanation=f"Repaired in {state.get('problem_name', 'a run')}. Diagnosis: "
        f"{diagnosis_text(hypotheses) or bug_class.replace('_', ' ')}.",
        fix=f"{what}\n{pattern['diff']}",
        example_before=state.get("original_source", ""),
        example_after=state["best_source"],
        reference=state.get("reference_source", ""),
        rules=list(dict.fromkeys(rules)),
        provenance=pattern["provenance"],
        times_accepted=1,
    )
    existing = _near_duplicate(kb, new, pattern["diff"])
    if existing is not None:
        kb.record_accepted(existing.id)
        stored = {"kb_id": existing.id, "kb_action": "merged"}
    else:
        kb.add(new)
        stored = {"kb_id": new.id, "kb_action": "added"}
    credited = []
    for pattern_id in state.get("pattern_ids") or []:
        retrieved = kb.get(pattern_id)
        if retrieved is not None and retrieved.id != stored["kb_id"] and set(retrieved.rules) & set(rules):
            kb.record_accepted(retrieved.id)
            credited.append(retrieved.id)
    return {**stored, "credited": credited}


@traced("distill")
def distill(state: RepairState) -> dict[str, Any]:
    original = state.get("original_source", "")
    repaired = state["best_source"]
    if repaired == original:
        return {"status": "repaired", "stop_reason": "already_passes"}
    fixes = [a for a in state.get("attempts") or [] if a.get("improved") or a.get("verdict") == "pass"]
    # The symptoms worth remembering are the original candidate's, before any fix.
    first_report = state.get("initial_report") or {}
    pattern: dict[str, Any] = {
        "id": f"distilled-{source_hash(original + repaired)}",
        "title": "; ".join(a["description"] for a in fixes)[:200],
        "bug_classes": sorted({a["hypothesis"] for a in fixes}),
        "rules": [a["rule"] for a in fixes],
        "symptoms": evidence(first_report),
        "diff": unified_diff(original, repaired),
        "provenance": f"distilled from {state.get('problem_name', 'a run')}",
    }
    if config_of(state).llm_replay:
        # A replay reproduces a run; it must not teach the knowledge base the same lesson twice.
        pattern["kb_action"] = "not stored (replay)"
        return {"distilled": pattern, "status": "repaired", "stop_reason": "repaired"}
    try:
        pattern.update(_store(state, pattern, fixes))
    except Exception as exc:  # noqa: BLE001 - a knowledge-base failure must not undo a verified repair
        log.warning("distill: could not store the pattern in the knowledge base: %s", exc)
        pattern["kb_error"] = str(exc)
    return {"distilled": pattern, "status": "repaired", "stop_reason": "repaired"}
