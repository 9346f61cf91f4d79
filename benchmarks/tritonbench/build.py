"""Build kernel-medic corpora from a local snapshot of github:thunlp/TritonBench at a pinned commit.

No third-party code is committed: the manifests (``benchmarks/<corpus>/manifest.toml``) name records of the
snapshot's ``LLM_generated/`` JSONL files, ``specs.json`` holds the call arguments derived from each
TritonBench-T operator's own test (``derive_specs.py``), and this script writes the case folders::

    python benchmarks/tritonbench/build.py --snapshot /work/.mirror/thunlp+TritonBench/repo --corpus crashes

Per case ``benchmarks/<corpus>/<id>/``: ``reference.py`` (the operator's reference function from
``data/TritonBench_T_v1/<op>.py`` above the test separator, or for TritonBench-G the original Triton
operator of ``data/TritonBench_G_v1/<op>.py`` moved to the CPU, wrapped as ``Model``/``get_inputs`` by
``reference_source``), ``candidate.py`` (the record's code + our ``ModelNew``, as
``kernel_medic.graph.drivers.import_tritonbench`` writes it), ``problem.toml`` and ``meta.toml`` (category,
description, ``looked_at_for_rules`` and a ``[source]`` table: repo, commit, file, record, model, op, triage
verdict and error class). The case folders are gitignored. The snapshot's HEAD must be the pinned commit
(``--allow-commit`` to build from another one, at your own risk: records may have moved).

``reference_source`` turns a spec into a reference: tensors become fresh random tensors with the recorded
shape and dtype, sizes > 1 as module-level integer constants (one per distinct size, so coupled dimensions
vary together when the judge derives shape variants; integer arguments >= 8 equal to a size use its
constant), in a value domain like the recorded one: symmetric positive definite matrices stay so, tensors
the test gave no negative values stay non-negative and those it kept within [-1, 1] stay there (uniform
over the recorded range), other float tensors are standard normal, integer tensors stay in the recorded
range, booleans are random unless constant; everything else is passed as recorded.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from kernel_medic.graph.drivers.import_tritonbench import (
    extract_code,
    load_reference,
    write_problem,
)

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
PINNED_COMMIT = "603e28a5050e8c268f6883a69709d477a272d49a"
REPO = "thunlp/TritonBench"
SPECS = HERE / "specs.json"
SEPARATOR = re.compile(r"^#{20,}\s*$", re.M)
# Light checks only need the default inputs; the timeout leaves room for the CPU interpreter.
PROBLEM_TOML = 'timeout_s = 60\ndevice = "cpu"\n'

# Category of an operator from keywords in its name, first match wins (fused ops take their heaviest part:
# a fused bmm+rmsnorm is matmul). A heuristic for reporting only; nothing is judged by it.
_CATEGORY_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("convolution", ("conv",)),
    (
        "matmul",
        (
            "matmul",
            "bmm",
            "mm",
            "linear",
            "dot",
            "mv",
            "gemm",
            "einsum",
            "tensordot",
            "addr",
            "ger",
            "outer",
            "kron",
            "baddbmm",
            "chain",
        ),
    ),
    ("softmax_attention", ("softmax", "attention", "softmin", "sdpa")),
    ("pooling", ("pool",)),
    (
        "loss",
        ("loss", "cross_entropy", "nll", "mse", "kl_div", "hinge", "huber", "triplet", "cosine_embedding"),
    ),
    (
        "normalization",
        ("norm", "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms", "normalize", "whiten"),
    ),
    (
        "scan_index",
        (
            "cum",
            "sort",
            "topk",
            "gather",
            "scatter",
            "index",
            "search",
            "argsort",
            "unique",
            "bucket",
            "histc",
            "bincount",
            "take",
            "masked_select",
            "nonzero",
            "roll",
            "flip",
        ),
    ),
    (
        "reduction",
        (
            "sum",
            "mean",
            "max",
            "min",
            "prod",
            "std",
            "var",
            "logsumexp",
            "argmax",
            "argmin",
            "all",
            "any",
            "median",
            "mode",
            "count",
            "trace",
            "det",
            "dist",
        ),
    ),
    (
        "activation",
        (
            "relu",
            "gelu",
            "sigmoid",
            "tanh",
            "silu",
            "elu",
            "softplus",
            "mish",
            "swish",
            "hardtanh",
            "hardswish",
            "hardsigmoid",
            "selu",
            "celu",
            "softsign",
            "threshold",
            "glu",
            "logsigmoid",
            "leaky",
        ),
    ),
)


def category_of(op: str) -> str:
    name = op.lower()
    for category, keywords in _CATEGORY_KEYWORDS:
        if any(k in name for k in keywords):
            return category
    return "elementwise"


def git_show(snapshot: Path, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(snapshot), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def snapshot_commit(snapshot: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(snapshot), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def reference_part(data_file_text: str) -> str:
    """The reference function part of a TritonBench-T data file (above the ``####`` separator)."""
    parts = SEPARATOR.split(data_file_text, maxsplit=1)
    if len(parts) != 2:
        raise ValueError("no '####...' separator between reference and test code")
    return parts[0].rstrip() + "\n"


class _Inputs:
    """Collects tensor arguments as forward parameters and their get_inputs() expressions."""

    def __init__(self) -> None:
        self.sizes: dict[int, str] = {}
        self.params: list[str] = []
        self.exprs: list[str] = []
        self.helpers: set[str] = set()

    def size(self, n: int) -> str:
        if n <= 1:
            return str(n)
        if n not in self.sizes:
            self.sizes[n] = f"SIZE{len(self.sizes)}"
        return self.sizes[n]

    def tensor(self, spec: dict[str, Any]) -> str:
        shape = ", ".join(self.size(n) for n in spec["shape"])
        shape_t = f"({shape},)" if len(spec["shape"]) == 1 else f"({shape})"
        dtype = f"torch.{spec['dtype']}"
        lo, hi = spec.get("min", 0.0), spec.get("max", 1.0)
        if spec["dtype"] == "bool":
            if spec.get("all"):
                expr = f"torch.ones({shape_t}, dtype=torch.bool)"
            elif not spec.get("any", True):
                expr = f"torch.zeros({shape_t}, dtype=torch.bool)"
            else:
                expr = f"torch.rand({shape_t}) > 0.5"
        elif "int" in spec["dtype"]:
            # Indices over a whole axis (0 .. size-1) follow that size, so a smaller derived shape keeps
            # them in range; other integer ranges (labels, flags, counts) keep their literal bounds.
            upper = self.sizes.get(int(hi) + 1) if int(lo) == 0 and int(hi) + 1 >= 8 else None
            expr = f"torch.randint({int(lo)}, {upper or int(hi) + 1}, {shape_t}, dtype={dtype})"
        elif spec.get("spd"):
            self.helpers.add("spd")
            expr = f"_spd({shape_t}, {dtype})"
        elif lo >= 0:
            if hi - lo < 1e-6:  # a constant tensor (ones, a fill): keep its sign, vary the values
                lo, hi = (0.5 * hi, 1.5 * hi) if hi > 0 else (0.0, 1.0)
            expr = f"torch.rand({shape_t}, dtype={dtype}) * {hi - lo!r} + {lo!r}"
        elif lo >= -1.0 and hi <= 1.0:  # a bounded domain the test respected (asin, atanh, a correlation)
            expr = f"torch.rand({shape_t}, dtype={dtype}) * {hi - lo!r} + {lo!r}"
        else:
            expr = f"torch.randn({shape_t}, dtype={dtype})"
        name = f"x{len(self.params)}"
        self.params.append(name)
        self.exprs.append(expr)
        return name

    def value(self, spec: dict[str, Any]) -> str:
        if spec["t"] == "tensor":
            return self.tensor(spec)
        if spec["t"] in ("list", "tuple"):
            items = [self.value(i) for i in spec["items"]]
            if spec["t"] == "list":
                return f"[{', '.join(items)}]"
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        text = spec["repr"]
        if re.fullmatch(r"\d+", text) and int(text) >= 8 and int(text) in self.sizes:
            return self.sizes[int(text)]
        return text


_SPD = '''

def _spd(shape, dtype):
    """A random symmetric positive definite matrix (batch) of `shape` (..., n, n)."""
    a = torch.randn(shape, dtype=dtype)
    return a @ a.transpose(-1, -2) + shape[-1] * torch.eye(shape[-1], dtype=dtype)
'''


def reference_source(function_source: str, spec: dict[str, Any], label: str) -> str:
    """A KernelBench-style reference.py calling `spec['function']` with the recorded argument kinds."""
    inputs = _Inputs()
    args = [inputs.value(a) for a in spec["args"]]
    args += [f"{k}={inputs.value(v)}" for k, v in spec["kwargs"].items()]
    if not inputs.params:
        raise ValueError("no tensor arguments: nothing for get_inputs() to make")
    constants = "".join(f"{name} = {n}\n" for n, name in inputs.sizes.items())
    helpers = _SPD if "spd" in inputs.helpers else ""
    params = "".join(f", {p}" for p in inputs.params)
    exprs = ",\n        ".join(inputs.exprs)
    return (
        f'"""{label}"""\n\n'
        f"{function_source.rstrip()}\n\n\n"
        "import torch  # noqa: E402\n\n"
        f"{constants}{helpers}\n\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self) -> None:\n"
        "        super().__init__()\n\n"
        f"    def forward(self{params}):\n"
        f"        return {spec['function']}({', '.join(args)})\n\n\n"
        "def get_inputs():\n"
        f"    return [\n        {exprs},\n    ]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )


def bench_of(file: str) -> str:
    """TritonBench-G or -T, from a generation file's path in the snapshot."""
    return "G" if "/Bench_G" in f"/{file}" else "T"


def op_of(spec: dict[str, Any]) -> str:
    """The operator name cases use: the reference function (TritonBench-T) or the data file stem (G)."""
    return str(spec.get("op", spec["function"]))


def write_references(snapshot: Path, specs: dict[str, Any], out: Path, bench: str = "T") -> dict[str, Path]:
    """REFS/<op>/reference.py (+ problem.toml) for every usable spec of `bench`; returns them by op.

    TritonBench-G references are the original Triton operators, moved to the CPU as their tests are
    (``derive_specs.reference_on_cpu``); they run in the same CPU interpreter as the candidates.
    """
    import derive_specs  # the sibling script; imported here because it imports this module lazily too

    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for key, spec in specs.items():
        if "skipped" in spec or spec.get("bench", "T") != bench:
            continue
        stem = key.split(":")[-1]
        path = spec.get("data_file", f"data/TritonBench_T_v1/{stem}.py")
        source = reference_part(git_show(snapshot, path))
        if bench == "G":
            source = derive_specs.reference_on_cpu(source)
            label = (
                f"TritonBench-G `{stem}`: the original Triton operator of {REPO} {path}, moved to the CPU,"
                f" entry `{spec['function']}` called with the argument kinds of its own test"
                " (benchmarks/tritonbench/derive_specs.py)."
            )
        else:
            label = (
                f"TritonBench-T `{spec['name']}`: reference function of {REPO} {path},"
                " called with the argument kinds of its own test (benchmarks/tritonbench/derive_specs.py)."
            )
        folder = out / op_of(spec)
        folder.mkdir(exist_ok=True)
        (folder / "reference.py").write_text(reference_source(source, spec, label))
        (folder / "problem.toml").write_text(PROBLEM_TOML)
        written[op_of(spec)] = folder
    return written


def load_manifest(path: Path) -> list[dict[str, Any]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cases = data.get("case", [])
    keys = {"id", "file", "record", "model", "op", "verdict", "error_class", "looked_at_for_rules"}
    for case in cases:
        missing = keys - set(case)
        if missing:
            raise ValueError(f"{path}: case {case.get('id', '?')}: missing {', '.join(sorted(missing))}")
    return cases


def _toml_value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, bool) else ("true" if value else "false")


def meta_toml(case: dict[str, Any], commit: str) -> str:
    source = {
        "repo": REPO,
        "commit": commit,
        "file": case["file"],
        "record": case["record"],
        "model": case["model"],
        "op": case["op"],
        "verdict": case["verdict"],
        "error_class": case["error_class"],
    }
    description = f"TritonBench {case['op']} by {case['model']} (record {case['record']}): {case['verdict']}"
    return (
        f"category = {_toml_value(category_of(case['op']))}\n"
        f"description = {_toml_value(description)}\n"
        f"looked_at_for_rules = {_toml_value(case['looked_at_for_rules'])}\n\n[source]\n"
        + "".join(f"{k} = {_toml_value(v)}\n" for k, v in source.items())
    )


def build(
    snapshot: Path, corpus: Path, *, allow_commit: bool = False, specs_path: Path = SPECS
) -> list[Path]:
    """Write every case of `corpus`/manifest.toml under `corpus`; returns the case folders."""
    commit = snapshot_commit(snapshot)
    if commit != PINNED_COMMIT and not allow_commit:
        raise ValueError(
            f"{snapshot}: HEAD is {commit[:12]}, not the pinned {PINNED_COMMIT[:12]} (--allow-commit)"
        )
    cases = load_manifest(corpus / "manifest.toml")
    specs = json.loads(specs_path.read_text())
    by_op = {(s.get("bench", "T"), op_of(s)): key for key, s in specs.items() if "skipped" not in s}
    refs_dir = corpus / "_references"
    if refs_dir.exists():
        shutil.rmtree(refs_dir)
    refs: dict[tuple[str, str], Path] = {}
    for bench in ("T", "G"):
        wanted = {(bench, c["op"]) for c in cases if bench_of(c["file"]) == bench}
        needed = {by_op[k]: specs[by_op[k]] for k in wanted if k in by_op}
        written = write_references(snapshot, needed, refs_dir / bench, bench)
        refs.update({(bench, op): path for op, path in written.items()})
    files: dict[str, list[str]] = {}
    folders = []
    for case in cases:
        ref_key = (bench_of(case["file"]), case["op"])
        if ref_key not in refs:
            raise ValueError(f"case {case['id']}: no usable spec for op {case['op']!r} in {specs_path}")
        if case["file"] not in files:
            files[case["file"]] = git_show(snapshot, case["file"]).splitlines()
        record = json.loads(files[case["file"]][case["record"]])
        code = extract_code(record[case.get("code_field", "predict")])
        reference = load_reference(refs[ref_key] / "reference.py", case["op"])
        folder = corpus / case["id"]
        if folder.exists():
            shutil.rmtree(folder)
        source = {"jsonl": case["file"], "record": case["record"], "op": case["op"], "code_field": "predict"}
        write_problem(folder, code, reference, source)
        (folder / "source.toml").unlink()  # meta.toml's [source] says it, with the repo and commit
        (folder / "meta.toml").write_text(meta_toml(case, commit))
        folders.append(folder)
    shutil.rmtree(refs_dir)
    return folders


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True, type=Path, help="git dir of the TritonBench snapshot")
    parser.add_argument("--corpus", required=True, help="realworld | crashes | a folder with a manifest.toml")
    parser.add_argument("--allow-commit", action="store_true", help="build from a snapshot at another commit")
    args = parser.parse_args(argv)
    corpus = Path(args.corpus) if "/" in args.corpus else BENCHMARKS / args.corpus
    try:
        folders = build(args.snapshot, corpus, allow_commit=args.allow_commit)
    except (ValueError, OSError, subprocess.CalledProcessError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(f"{len(folders)} cases written under {corpus}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
