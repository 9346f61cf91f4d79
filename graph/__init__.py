"""The repair graph: state, configuration, wiring, budgets, the services nodes share, and the public API.

`builder.py` reads as the design's diagram; `api.py` is `repair()`; `drivers/` holds what runs the graph.

May import: kernel_medic.nodes, kernel_medic.tools, kernel_medic.tools.evaluation, kernel_medic.tools.repair
"""
