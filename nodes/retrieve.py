"""retrieve: the known failure patterns (and the rewrite rules that apply them) that fit the diagnosis.

The knowledge base is queried with the diagnosis (text), the best report's symptom signature, the Triton
constructs of the best source and the operator category of the reference. Rule order: the retrieved
patterns' rules in rank order, then the diagnosis hypotheses' rules not listed yet.
"""

from __future__ import annotations

from typing import Any

from kernel_medic.graph.runtime import config_of, traced
from kernel_medic.graph.state import RepairState
from kernel_medic.tools.diagnosis import evidence
from kernel_medic.tools.rewrites import RULES
from kernel_medic.vectordb.features import code_features, infer_category
from kernel_medic.vectordb.store import KnowledgeBase, RetrievalQuery, open_knowledge_base

TOP_K = 5


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
    kb = knowledge_base(state)
    hits = kb.search(query_for(state), k=TOP_K)
    ids = [p.id for p, _, _ in hits]
    patterns = [{"id": p.id, "title": p.title, "bug_class": p.bug_class, "fix": p.fix} for p, _, _ in hits]
    rule_ids: list[str] = []
    for p, _, _ in hits:
        rule_ids += [r for r in p.rules if r in RULES and r not in rule_ids]
    for hypothesis in state.get("diagnosis") or []:
        rule_ids += [r for r in hypothesis.get("rules") or [] if r in RULES and r not in rule_ids]
    kb.record_retrieved(ids)
    return {"pattern_ids": ids, "patterns": patterns, "rule_ids": rule_ids}
