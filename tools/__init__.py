"""What the nodes use, one sub-package per concern, dependencies pointing down:

    sandbox      running untrusted code (warm workers, a fresh locked-down child per job, device backends)
    evaluation   problems, cases, the judge's verdicts and mismatch analysis (and its sandbox-side jobs)
    repair       edit search, edits, mutations, patchers, the LLM client, and `rules/` by family
    diagnosis    hypotheses, static features, probes, intermediate capture
    integrity    the gate: static checks, dynamic checks in the sandbox, held-back coverage

The modules directly here (`trace`, `paths`) are used by all of them. Nothing under `tools/` knows the graph.

May import: nothing of kernel_medic
"""
