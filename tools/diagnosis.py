"""Diagnosis from an evaluation report: evidence keywords and ranked bug-class hypotheses.

Evidence is what the report shows (where the errors are, how candidate and reference relate, which input
variants fail); hypotheses are the taxonomy's bug classes whose rules expect that evidence, ranked by how
much of it they explain.
"""

from __future__ import annotations

from typing import Any

from kernel_medic.tools.rewrites import RULES, rank_rules

_VALUE_VARIANTS = {
    "x100",
    "x1e-3",
    "all_negative",
    "all_positive",
    "shifted_mean",
    "heavy_tailed",
    "integer_ties",
}


def evidence(report: dict[str, Any]) -> list[str]:
    """Keywords describing a report: failing patterns, relationship kinds, verdicts and variant names."""
    found: list[str] = []

    def add(word: str) -> None:
        if word and word not in found:
            found.append(word)

    cases = report.get("cases") or []
    failing = [c for c in cases if c.get("verdict") != "pass"]
    for case in failing:
        if case.get("verdict") in ("shape_mismatch", "dtype_mismatch", "runtime_error", "compile_error"):
            add(case["verdict"])
        if case.get("pattern") not in (None, "none"):
            add(case["pattern"])
        for rel in case.get("relationships") or []:
            kind = rel.split(":", 1)[0].split(".", 1)[-1]
            add(kind)
    passing = {c["name"] for c in cases if c.get("verdict") == "pass"}
    failing_names = {c["name"] for c in failing}
    if "seed0" in passing or not failing_names & {"seed0", "seed1", "seed2"}:
        for name in sorted(failing_names):
            if name.startswith("shape"):
                add("shape")
            elif name == "noncontig":
                add("noncontig")
            elif name in _VALUE_VARIANTS:
                add(name)
    return found


def hypotheses(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Bug-class hypotheses ranked by the share of the evidence their rules explain (confidence in [0, 1])."""
    words = evidence(report)
    ranked: dict[str, dict[str, Any]] = {}
    for rule_id in rank_rules(words):
        rule = RULES[rule_id]
        explained = [w for w in words if w in rule.symptoms]
        confidence = round(len(explained) / len(words), 3) if words else 0.0
        entry = ranked.setdefault(
            rule.bug_class,
            {"bug_class": rule.bug_class, "confidence": confidence, "evidence": explained, "rules": []},
        )
        entry["rules"].append(rule_id)
        if confidence > entry["confidence"]:
            entry["confidence"], entry["evidence"] = confidence, explained
    return sorted(ranked.values(), key=lambda h: -h["confidence"])
