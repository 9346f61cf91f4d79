"""The graph's nodes, one module each: intake, evaluate, diagnose, retrieve, instrument, patch, verify, audit,
distill, guard. A node reads the state, calls tools, and returns its update; it knows no other node's code.

May import: kernel_medic.graph, kernel_medic.tools, kernel_medic.tools.evaluation,
kernel_medic.tools.diagnosis, kernel_medic.tools.repair, kernel_medic.tools.repair.rules,
kernel_medic.tools.integrity, kernel_medic.vectordb
"""
