"""retrieve: the known failure patterns (and the rewrite rules that apply them) that fit the diagnosis.

The knowledge base is queried with the diagnosis (text), the best report's symptom signature, the Triton
constructs of the best source and the operator category of the reference. Rule order: the retrieved
patterns' rules in rank order, then the diagnosis hypotheses' rules not listed yet.
"""

from __future__ import annotations

import logging
from typing import Any

from kernel_medic.graph.runtime import config_of, traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis.hypotheses import evidence
from kernel_medic.tools.repair.rules.registry import RULES
from kernel_medic.vectordb.features import code_features, infer_category
from kernel_medic.vectordb.store import KnowledgeBase, RetrievalQuery, open_knowledge_base

TOP_K = 5
log = logging.getLogger(__name__)


def knowledge_base(state: RepairState) -> KnowledgeBase:
    """The store named by the run's config (kb_path), else KMEDIC_KB_PATH / the data directory's kb/."""
    return open_knowledge_base(config_of(state).kb_path)


def diagnosis_text(hypotheses: list[dict[str, Any]]) -> str:
    """The diagnosis in words, as the store's embedding sees it."""
    parts = []
    for h in hypotheses[:3]:
        words = h["bug_class"].replace("_", " ")
        if h.get("evidence"):
            words += " (" + ", ".join(str(e).replace("_", " ") for e in h["evidence"]) + ")"
        for key in ("summary", "explanation", "location"):
            if isinstance(h.get(key), str) and h[key]:
                words += f": {h[key]}"
        parts.append(words)
    return "; ".join(parts)


def query_for(state: RepairState, report: dict[str, Any] | None = None) -> RetrievalQuery:
    if report is None:
        report = state.get("best_report") or state.get("initial_report") or {}
    return RetrievalQuery(
        text=diagnosis_text(state.get("diagnosis") or []),
        symptoms=evidence(report),
        category=infer_category(state.get("reference_source", "")),
        code_features=code_features(state.get("best_source") or state.get("original_source", "")),
    )


@traced("retrieve")
def retrieve(state: RepairState) -> dict[str, Any]:
    replay_trace = config_of(state).llm_replay
    if replay_trace:
        from kernel_medic.tools.trace import RecordedRetrievals

        recorded = RecordedRetrievals.for_trace(replay_trace).next()
        if recorded is not None:
            return {k: recorded[k] for k in ("pattern_ids", "patterns", "rule_ids") if k in recorded}
    try:
        kb = knowledge_base(state)
        hits = kb.search(query_for(state), k=TOP_K)
    except Exception as exc:  # noqa: BLE001 - a busy or broken store must not sink the repair
        log.warning("retrieve: knowledge base unavailable, using the diagnosis' rules: %s", exc)
        rule_ids = []
        for hypothesis in state.get("diagnosis") or []:
            rule_ids += [r for r in hypothesis.get("rules") or [] if r in RULES and r not in rule_ids]
        return {"pattern_ids": [], "patterns": [], "rule_ids": rule_ids}
    ids = [p.id for p, _, _ in hits]
    # The score lets the LLM prompt leave out patterns below a relevance threshold; the changes let it point
    # at candidate lines that look like a pattern's bug.
    patterns = [
        {
            "id": p.id,
            "title": p.title,
            "bug_class": p.bug_class,
            "fix": p.fix,
            "score": score,
            "changes": p.changes(),
        }
        for p, score, _ in hits
    ]
    rule_ids: list[str] = []
    for p, _, _ in hits:
        rule_ids += [r for r in p.rules if r in RULES and r not in rule_ids]
    for hypothesis in state.get("diagnosis") or []:
        rule_ids += [r for r in hypothesis.get("rules") or [] if r in RULES and r not in rule_ids]
    try:
        kb.record_retrieved(ids)
    except Exception as exc:  # noqa: BLE001 - usage counters are best effort
        log.warning("retrieve: could not count the retrieval: %s", exc)
    return {"pattern_ids": ids, "patterns": patterns, "rule_ids": rule_ids}
