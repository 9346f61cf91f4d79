"""Offline rewrite rules, one module per family; `registry.py` lists every rule in search order. A rule is a
pattern (which sites of the candidate's syntax tree it matches) and an edit (what it offers at each): one
generator under `base.rule`, which parses, walks the kernels, builds the rewrites and registers the rule.

May import: kernel_medic.tools
"""
