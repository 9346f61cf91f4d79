"""What `kmedic batch` and `kmedic bench` accept as their input, turned into a folder of problem folders.

- a folder of problem folders (``reference.py`` + ``candidate.py`` each): used as it is;
- a KernelBench run folder (``level_<L>_problem_<P>_sample_<S>_kernel.py`` files) with ``--problems`` naming
  KernelBench's problem folder: imported by `import_kernelbench`;
- a TritonBench-style JSONL file (generated code in a field of each record) with ``--references`` naming a
  folder of reference problems: imported by `import_tritonbench`.

Imports are written under ``OUT/imported/`` so a rerun of the same command reuses them (and resumes).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from kernel_medic.graph.drivers.import_kernelbench import import_kernelbench, is_kernelbench_run
from kernel_medic.tools.evaluation.problem import InvalidProblem


def resolve_source(
    source: str | Path,
    out: Path,
    *,
    problems: str | Path | None = None,
    references: str | Path | None = None,
    code_field: str | None = None,
    log: TextIO = sys.stderr,
) -> Path:
    """The folder of problem folders SOURCE stands for; InvalidProblem (one line) when it is unusable."""
    path = Path(source)
    if not path.exists():
        raise InvalidProblem(f"{path}: no such file or folder")
    imported = Path(out) / "imported"
    if path.is_file():
        if path.suffix != ".jsonl":
            raise InvalidProblem(f"{path}: a file input must be a TritonBench-style .jsonl, or give a folder")
        if references is None:
            raise InvalidProblem(f"{path}: a JSONL input needs --references DIR (the reference problems)")
        from kernel_medic.graph.drivers.import_tritonbench import import_tritonbench

        kwargs = {"code_field": code_field} if code_field else {}
        try:
            written = import_tritonbench(path, Path(references), imported, **kwargs)
        except ValueError as exc:
            raise InvalidProblem(str(exc)) from exc
        log.write(f"imported {len(written)} records of {path.name} into {imported}\n")
        return imported
    if is_kernelbench_run(path):
        if problems is None:
            raise InvalidProblem(f"{path}: a KernelBench run needs --problems DIR (KernelBench/KernelBench)")
        try:
            result = import_kernelbench(path, Path(problems), imported)
        except ValueError as exc:
            raise InvalidProblem(str(exc)) from exc
        for name, why in result.skipped:
            log.write(f"skipped {name}: {why}\n")
        if not result.problems:
            raise InvalidProblem(f"{path}: no kernel of this run has its problem under {problems}")
        log.write(f"imported {len(result.problems)} kernels of {path.name} into {imported}\n")
        return imported
    return path
