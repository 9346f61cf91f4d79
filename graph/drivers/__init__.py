"""What drives the graph from outside: the `kmedic` CLI, batch and bench runs, the Ray executor, replays,
per-run HTML reports and the Regenerate baseline. Everything here calls `repair()` or reports on it.

May import: kernel_medic.graph, kernel_medic.tools, kernel_medic.tools.sandbox, kernel_medic.tools.evaluation,
kernel_medic.tools.diagnosis, kernel_medic.tools.repair, kernel_medic.tools.integrity, kernel_medic.vectordb
"""
