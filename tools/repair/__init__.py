"""Making a fix: edits and diffs, score-guided edit search, generic mutations, the patch strategies (offline,
LLM, hybrid) and the LLM client; `rules/` holds the offline rewrite rules by family.

May import: kernel_medic.tools, kernel_medic.tools.evaluation, kernel_medic.tools.repair.rules
"""
