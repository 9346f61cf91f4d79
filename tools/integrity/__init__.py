"""The integrity gate, the only door to `repaired`: static checks over everything ModelNew reaches, dynamic
checks in the sandbox (`jobs.py` is the half that runs inside), and held-back coverage.

May import: kernel_medic.tools, kernel_medic.tools.sandbox, kernel_medic.tools.evaluation,
kernel_medic.tools.repair
"""
