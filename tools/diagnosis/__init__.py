"""Why a candidate is wrong: ranked bug-class hypotheses from a report, static code features, probe inputs and
intermediate capture (`jobs.py` is the half that runs inside the sandbox).

May import: kernel_medic.tools, kernel_medic.tools.sandbox, kernel_medic.tools.evaluation,
kernel_medic.tools.repair.rules
"""
