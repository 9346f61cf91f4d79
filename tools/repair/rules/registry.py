"""Every offline rewrite rule by id: the core taxonomy rules and the rule families in their own modules."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kernel_medic.tools.repair.rules import core as rewrites
from kernel_medic.tools.repair.rules import formula as formula_rules
from kernel_medic.tools.repair.rules import geometry as geometry_rules
from kernel_medic.tools.repair.rules import host as host_rules
from kernel_medic.tools.repair.rules import index as index_rules
from kernel_medic.tools.repair.rules import reduction as reduction_rules
from kernel_medic.tools.repair.rules.core import Rewrite, Rule, RuleContext

RULES: dict[str, Rule] = {
    **rewrites.RULES,
    **{rule.id: rule for rule in formula_rules.RULES},
    **{rule.id: rule for rule in geometry_rules.RULES},
    **{rule.id: rule for rule in index_rules.RULES},
    **{rule.id: rule for rule in host_rules.RULES},
    **{rule.id: rule for rule in reduction_rules.RULES},
}


def propose(
    source: str, rule_ids: Sequence[str] | None = None, context: RuleContext | None = None
) -> list[Rewrite]:
    """All rewrites of the given rules (default: all) in rule order, one per distinct resulting source."""
    ids: Iterable[str] = RULES if rule_ids is None else rule_ids
    unknown = [i for i in ids if i not in RULES]
    if unknown:
        raise ValueError(f"unknown rewrite rule(s): {', '.join(unknown)}")
    if rewrites._tree(source) is None:
        return []
    seen, out = {source}, []
    for rule_id in ids:
        for rewrite in RULES[rule_id].apply(source, context):
            if rewrite.source not in seen:
                seen.add(rewrite.source)
                out.append(rewrite)
    return out


def rank_rules(evidence: Sequence[str]) -> list[str]:
    """Rule ids, most evidence keywords matched by their symptoms first; ties keep registry order."""
    keys = set(evidence)
    return sorted(RULES, key=lambda rule_id: -len(keys & set(RULES[rule_id].symptoms)))
