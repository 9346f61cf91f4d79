"""The judge: loading a problem and its settings, the cases it is checked on, running reference and candidate
in the sandbox (`jobs.py` is the half that runs inside), verdicts with tolerances, and mismatch analysis.

May import: kernel_medic.tools, kernel_medic.tools.sandbox
"""
