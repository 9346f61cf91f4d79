"""Turn a KernelBench generation run into problem folders that `kmedic batch` and `kmedic bench` repair.

KernelBench's naming, which this importer relies on:
- a run folder (KernelBench's ``runs/<run_name>/``) holds one generated kernel per sample, named
  ``level_<L>_problem_<P>_sample_<S>_kernel.py``, each a module defining ``ModelNew``;
- the problems live in KernelBench's ``KernelBench/`` folder as ``level<L>/<P>_<Name>.py``, each defining
  ``Model``, ``get_inputs`` and ``get_init_inputs``.

Each kernel becomes ``OUT/level<L>_<P>_<Name>_s<S>/`` holding ``reference.py`` (the problem file, unchanged),
``candidate.py`` (the generated file, unchanged) and a ``meta.toml`` whose ``[source]`` table records the
run folder, file, level, problem and sample, so the folder is an imported corpus case (no ``fixed.py``).
Nothing is executed here: the files are copied as text. A kernel whose problem file is missing is skipped
and named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

KERNEL_NAME = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
PROBLEM_NAME = re.compile(r"^(\d+)_(.+)\.py$")
# Words in a KernelBench problem name that say which of our categories it belongs to (first match wins).
CATEGORY_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("softmax_attention", ("softmax", "attention")),
    ("normalization", ("norm",)),
    ("loss", ("loss", "divergence")),
    ("pooling", ("pool",)),
    ("convolution", ("conv",)),
    ("matmul", ("matmul", "gemm", "matrix", "linear", "bmm", "mm_")),
    ("scan_index", ("cumsum", "cumprod", "scan", "argmax", "argmin", "index", "gather")),
    ("reduction", ("sum", "mean", "max_reduction", "min_reduction", "reduction", "prod")),
    ("activation", ("relu", "gelu", "sigmoid", "tanh", "swish", "elu", "softplus", "softsign", "hardtanh")),
)


@dataclass
class Imported:
    """What an import wrote, and what it could not use (file name, reason)."""

    problems: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def is_kernelbench_run(folder: Path) -> bool:
    """A folder is a KernelBench run when it holds at least one kernel named the KernelBench way."""
    return folder.is_dir() and any(KERNEL_NAME.match(p.name) for p in folder.iterdir())


def category_of(problem_name: str) -> str:
    lowered = problem_name.lower()
    for category, words in CATEGORY_WORDS:
        if any(word in lowered for word in words):
            return category
    return "other"


def _problem_files(problems: Path, level: int) -> dict[int, Path]:
    """Problem id -> file, from ``problems/level<L>/`` (KernelBench's folder) or ``problems`` itself."""
    folder = problems / f"level{level}"
    if not folder.is_dir():
        folder = problems
    found: dict[int, Path] = {}
    for path in folder.glob("*.py"):
        match = PROBLEM_NAME.match(path.name)
        if match:
            found[int(match.group(1))] = path
    return found


def import_kernelbench(run: Path, problems: Path, out: Path) -> Imported:
    """Write one problem folder per generated kernel of RUN under OUT; ValueError (one line) on bad input."""
    run, problems, out = Path(run), Path(problems), Path(out)
    if not run.is_dir():
        raise ValueError(f"{run}: no such run folder")
    if not problems.is_dir():
        raise ValueError(f"{problems}: no such KernelBench problems folder (KernelBench/KernelBench)")
    kernels = sorted(p for p in run.iterdir() if KERNEL_NAME.match(p.name))
    if not kernels:
        raise ValueError(f"{run}: no level_<L>_problem_<P>_sample_<S>_kernel.py file: not a KernelBench run")
    result = Imported()
    by_level: dict[int, dict[int, Path]] = {}
    for kernel in kernels:
        level, problem_id, sample = (int(g) for g in KERNEL_NAME.match(kernel.name).groups())  # type: ignore[union-attr]
        files = by_level.setdefault(level, _problem_files(problems, level))
        reference = files.get(problem_id)
        if reference is None:
            result.skipped.append((kernel.name, f"no problem {problem_id} of level {level} under {problems}"))
            continue
        name = PROBLEM_NAME.match(reference.name).group(2)  # type: ignore[union-attr]
        folder = out / f"level{level}_{problem_id}_{_slug(name)}_s{sample}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "reference.py").write_text(reference.read_text(encoding="utf-8"), encoding="utf-8")
        (folder / "candidate.py").write_text(kernel.read_text(encoding="utf-8"), encoding="utf-8")
        (folder / "meta.toml").write_text(
            _meta(category_of(name), name, run, kernel.name, level, problem_id, sample), encoding="utf-8"
        )
        result.problems.append(folder)
    return result


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")[:60] or "problem"


def _meta(category: str, name: str, run: Path, file: str, level: int, problem_id: int, sample: int) -> str:
    description = f"KernelBench level {level} problem {problem_id} ({name}), sample {sample} of {run.name}"
    return (
        f"category = {_toml(category)}\n"
        f"description = {_toml(description)}\n"
        "looked_at_for_rules = false\n\n"
        "[source]\n"
        'kind = "kernelbench-run"\n'
        f"run = {_toml(str(run.resolve()))}\n"
        f"file = {_toml(file)}\n"
        f"level = {level}\nproblem = {problem_id}\nsample = {sample}\n"
    )


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
