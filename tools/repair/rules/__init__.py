"""Offline rewrite rules, one module per family; `registry.py` lists every rule by id. A rule is a pattern
(which sites of the candidate's syntax tree it matches) and an edit (what it offers at each).

May import: kernel_medic.tools
"""
