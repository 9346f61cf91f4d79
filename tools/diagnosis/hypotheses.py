"""Diagnosis from an evaluation report: evidence keywords and ranked bug-class hypotheses.

Evidence is what the report shows (where the errors are, how candidate and reference relate, which input
variants fail); hypotheses are the taxonomy's bug classes whose rules expect that evidence, ranked by how
much of it they explain. Static code features (with their lines) and probe findings (`supports`/`refutes`)
raise or lower a class and give it a suspected location; an LLM may then re-rank the same list.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kernel_medic.tools.diagnosis.static_features import Feature, static_features
from kernel_medic.tools.evaluation.cases import VALUE_VARIANTS
from kernel_medic.tools.repair.rules.registry import RULES, rank_rules

_VALUE_VARIANTS = set(VALUE_VARIANTS)


def evidence(report: dict[str, Any]) -> list[str]:
    """Keywords describing a report: failing patterns, relationship kinds, verdicts and variant names."""
    found: list[str] = []

    def add(word: str) -> None:
        if word and word not in found:
            found.append(word)

    # Cases outside the verdict (a layout warning, a shape outside the domain) are no evidence of a bug.
    cases = [c for c in report.get("cases") or [] if c.get("counted", True)]
    failing = [c for c in cases if c.get("verdict") != "pass"]
    for case in failing:
        if case.get("verdict") in ("shape_mismatch", "dtype_mismatch", "runtime_error", "compile_error"):
            add(case["verdict"])
        if case.get("crash"):
            add(
                case["crash"]["class"]
            )  # the crash class (api_drift, wrapper_launch_error...) names its rules
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


# Bug classes the taxonomy names that no offline rule addresses yet: still worth a hypothesis.
BUG_CLASSES = (
    *dict.fromkeys(rule.bug_class for rule in RULES.values()),
    "k_loop",
    "operator_misread",
    "wrapper",
)
# How much each source of evidence moves a class: the report is what failed, static features and probes
# say which construct could have caused it.
_REPORT_WEIGHT = 0.55
_STATIC_WEIGHT = 0.3
_PROBE_SUPPORT = 0.25
_PROBE_REFUTE = 0.35


def _rules_for(bug_class: str) -> list[str]:
    return [rule_id for rule_id, rule in RULES.items() if rule.bug_class == bug_class]


def _report_hypotheses(report: dict[str, Any]) -> list[dict[str, Any]]:
    words = evidence(report)
    ranked: dict[str, dict[str, Any]] = {}
    for rule_id in rank_rules(words):
        rule = RULES[rule_id]
        explained = [w for w in words if w in rule.symptoms]
        confidence = round(len(explained) / len(words), 3) if words else 0.0
        entry = ranked.setdefault(
            rule.bug_class,
            {
                "bug_class": rule.bug_class,
                "confidence": confidence,
                "evidence": explained,
                "location": None,
                "rules": [],
            },
        )
        entry["rules"].append(rule_id)
        if confidence > entry["confidence"]:
            entry["confidence"], entry["evidence"] = confidence, explained
    return sorted(ranked.values(), key=lambda h: -h["confidence"])


def hypotheses(
    report: dict[str, Any],
    source: str | None = None,
    findings: list[dict[str, Any]] | None = None,
    filename: str = "candidate.py",
) -> list[dict[str, Any]]:
    """Bug-class hypotheses, most likely first: {bug_class, confidence in [0, 1], evidence, location, rules}.

    From the report alone, confidence is the share of the report's evidence a class's rules explain. With the
    candidate `source`, its static features add weight and a location ("candidate.py:LINE"); probe
    `findings` ({supports, refutes}) add or remove weight.
    """
    crash = report.get("crash") or {}
    if crash:
        return _crash_hypotheses(crash, report, source, findings, filename)
    base = _report_hypotheses(report)
    if source is None and not findings:
        return base
    features = static_features(source) if source is not None else []
    by_class: dict[str, dict[str, Any]] = {h["bug_class"]: h for h in base}
    scored: list[dict[str, Any]] = []
    for bug_class in BUG_CLASSES:
        h = by_class.get(bug_class)
        report_conf = h["confidence"] if h else 0.0
        ev = list(h["evidence"]) if h else []
        mine = [f for f in features if f.bug_class == bug_class]
        score = _REPORT_WEIGHT * report_conf + (_STATIC_WEIGHT if mine else 0.0)
        ev += [f"{f.kind} (line {f.line}): {f.detail}" for f in mine]
        for finding in findings or []:
            if bug_class in (finding.get("supports") or []):
                score += _PROBE_SUPPORT
                ev.append(f"probe {finding.get('probe')}: {_result_text(finding)}")
            if bug_class in (finding.get("refutes") or []):
                score -= _PROBE_REFUTE
                ev.append(f"probe {finding.get('probe')} refutes: {_result_text(finding)}")
        if not h and not mine and score <= 0:
            continue
        scored.append(
            {
                "bug_class": bug_class,
                "confidence": round(min(max(score, 0.0), 1.0), 3),
                "evidence": ev,
                "location": _location(mine, filename),
                "rules": h["rules"] if h else _rules_for(bug_class),
            }
        )
    # Stable on ties: the report-only order (rule registry order) breaks them.
    return sorted(scored, key=lambda h: -h["confidence"])


def _crash_hypotheses(
    crash: dict[str, Any],
    report: dict[str, Any],
    source: str | None,
    findings: list[dict[str, Any]] | None,
    filename: str,
) -> list[dict[str, Any]]:
    """A crash hides every numeric symptom: its class is the first hypothesis, at the line the crash names,
    with that class's rules; the other crash classes' rules follow (a crash often has a second cause).
    A CPU-interpreter limitation gets no hypothesis: it is not the kernel's bug and is never repaired."""
    klass = crash.get("class", "other")
    if klass == "interpreter_limitation":
        return []
    crash_classes = list(
        dict.fromkeys(
            r.bug_class
            for r in RULES.values()
            if "compile_error" in r.symptoms or r.bug_class == "output_allocation"
        )
    )
    line = crash.get("line")
    first = {
        "bug_class": klass,
        "confidence": 1.0,
        "evidence": [crash.get("evidence", "")],
        "location": f"{filename}:{line}" if line else None,
        "rules": _rules_for(klass),
    }
    others = [
        {
            "bug_class": c,
            "confidence": 0.3,
            "evidence": [f"a second crash cause is possible after: {crash.get('evidence', '')}"],
            "location": None,
            "rules": _rules_for(c),
        }
        for c in crash_classes
        if c != klass
    ]
    if klass not in crash_classes and not first["rules"]:
        # `other`/`type_mismatch`: no rule of its own, every crash rule is a candidate
        first["rules"] = [r for c in crash_classes for r in _rules_for(c)]
    return [first, *others]


def _location(features: list[Feature], filename: str) -> str | None:
    return f"{filename}:{features[0].line}" if features else None


def _result_text(finding: dict[str, Any]) -> str:
    result = finding.get("result")
    return result if isinstance(result, str) else json.dumps(result, sort_keys=True, default=str)[:200]


def refine(hypotheses_: list[dict[str, Any]], reply_text: str) -> list[dict[str, Any]]:
    """The offline hypotheses re-ranked and annotated by an LLM's JSON reply; unchanged when it is malformed.

    The reply is a JSON list of {bug_class, confidence, location?, note?}. Known classes keep their rules and
    evidence; classes the reply omits follow in their offline order; unknown classes are ignored.
    """
    items = _json_list(reply_text)
    if items is None:
        return hypotheses_
    offline = {h["bug_class"]: h for h in hypotheses_}
    out: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("bug_class"), str):
            return hypotheses_
        cls = item["bug_class"]
        conf = item.get("confidence")
        if cls not in offline and cls not in BUG_CLASSES:
            continue
        if not isinstance(conf, int | float) or isinstance(conf, bool) or not 0 <= conf <= 1:
            return hypotheses_
        if any(h["bug_class"] == cls for h in out):
            continue
        base = offline.get(cls) or {
            "bug_class": cls,
            "confidence": 0.0,
            "evidence": [],
            "location": None,
            "rules": _rules_for(cls),
        }
        entry = {**base, "evidence": list(base["evidence"]), "confidence": round(float(conf), 3)}
        location = item.get("location")
        if isinstance(location, str) and re.fullmatch(r"[\w./-]+:\d+", location):
            entry["location"] = location
        if isinstance(item.get("note"), str) and item["note"].strip():
            entry["evidence"].append("llm: " + item["note"].strip()[:300])
        out.append(entry)
    if not out:
        return hypotheses_
    ranked = sorted(out, key=lambda h: -h["confidence"])
    return ranked + [h for h in hypotheses_ if h["bug_class"] not in {r["bug_class"] for r in ranked}]


def _json_list(text: str) -> list[Any] | None:
    """The first JSON list in `text` (bare, or inside a ```json fence); None when there is none."""
    fenced = re.search(r"```(?:json)?\s*(\[.*?\])\s*```", text, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for blob in candidates:
        try:
            value = json.loads(blob)
        except json.JSONDecodeError:
            continue
        if isinstance(value, list):
            return value
    return None
