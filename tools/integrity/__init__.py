"""The integrity gate, the only door to `repaired`: default-deny static checks over the whole candidate file
(`static_checks.py`, `function_scan.py`, `vocabulary.py`), dispatcher-level dynamic checks in the sandbox
(`jobs.py` is the half that runs inside), held-back coverage and a sleeper run (`gate.py` judges).

May import: kernel_medic.tools, kernel_medic.tools.sandbox, kernel_medic.tools.evaluation,
kernel_medic.tools.repair
"""
