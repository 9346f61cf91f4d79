"""Derive a problem spec (call arguments) for every TritonBench-T operator from the operator's own test code.

Each ``data/TritonBench_T_v1/<op>.py`` of the snapshot is a torch reference function, a ``####...`` separator
line and test code that calls the function on CUDA tensors. This script runs that test code in a child
process (one per operator, with a timeout), on the CPU (``'cuda'`` device strings and ``.cuda()`` calls are
rewritten), with the reference function wrapped to record the arguments of each top-level call. The spec
written is data, not third-party code: per operator the function name and one call's arguments, tensors
described by shape, dtype and value domain (min, max, integral, symmetric positive definite), everything
else by its Python ``repr``. ``build.py`` turns a spec plus the snapshot's reference function into a
KernelBench-style ``reference.py``.

Which call: calls with an ``out=`` tensor are avoided (a fresh random ``out`` says nothing), then the call
with the most tensor elements is taken (the largest test case exercises tails best). An operator is skipped
(reason recorded) when its test fails on the CPU, when no call has only supported argument kinds (complex
tensors, generators, arbitrary objects), or when it is stochastic: two runs of the reference on the same
inputs with different seeds disagree (dropout, sampling), so no candidate could be judged against it, or
when the reference built from the spec fails or gives non-finite values on fresh random inputs.

    python benchmarks/tritonbench/derive_specs.py --snapshot /work/.mirror/thunlp+TritonBench/repo \
        [--out benchmarks/tritonbench/specs.json] [--ops add,div]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SEPARATOR = re.compile(r"^#{20,}\s*$", re.M)
HERE = Path(__file__).resolve().parent

# The recorder runs in the child process: it execs the reference part as module <stem> (so the test's
# `from <stem> import <fn>` finds it), wraps the function, runs the test part and prints the calls as JSON.
_CHILD = r"""
import json, os, sys, types, math
import torch
if os.environ.get("TRITON_INTERPRET") == "1":  # the judge's own interpreter shims (autotune, libdevice)
    from kernel_medic.tools.sandbox import interpreter_shims
    interpreter_shims.install()
stem, fn_name = sys.argv[1], sys.argv[2]
ref_src = open(sys.argv[3]).read()
test_src = open(sys.argv[4]).read()
mod = types.ModuleType(stem)
mod.__file__ = stem + ".py"
sys.modules[stem] = mod
exec(compile(ref_src, stem + ".py", "exec"), mod.__dict__)
names = [fn_name] if fn_name != "*" else [
    k for k, v in mod.__dict__.items() if isinstance(v, types.FunctionType) and v.__module__ == stem
]
calls = []
depth = [0]

class Unsupported(Exception):
    pass

def describe(v):
    if isinstance(v, torch.Tensor):
        if v.is_complex() or v.is_sparse or v.layout != torch.strided:
            raise Unsupported("complex or sparse tensor")
        d = {"t": "tensor", "shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
        x = v.detach()
        if x.numel() and x.dtype != torch.bool:
            xf = x.double()
            d["min"] = float(xf.min()); d["max"] = float(xf.max())
            d["integral"] = bool(torch.all(xf == xf.round())) and bool(torch.isfinite(xf).all())
            d["finite"] = bool(torch.isfinite(xf).all())
            if x.dim() >= 2 and x.shape[-1] == x.shape[-2] and x.shape[-1] > 1 and x.is_floating_point():
                sym = torch.allclose(xf, xf.transpose(-1, -2), atol=1e-5)
                if sym:
                    try:
                        d["spd"] = bool(torch.all(torch.linalg.eigvalsh(xf) > 0))
                    except Exception:
                        d["spd"] = False
        elif x.dtype == torch.bool and x.numel():
            d["all"] = bool(x.all()); d["any"] = bool(x.any())
        return d
    if isinstance(v, (list, tuple)) and not isinstance(v, torch.Size):
        return {"t": "list" if isinstance(v, list) else "tuple", "items": [describe(i) for i in v]}
    if isinstance(v, torch.device):
        return {"t": "const", "repr": "'cpu'"}
    if isinstance(v, torch.dtype):
        return {"t": "const", "repr": str(v)}
    if isinstance(v, float) and not math.isfinite(v):
        return {"t": "const", "repr": f"float({str(v)!r})"}
    if v is None or isinstance(v, (bool, int, float, str, torch.Size, slice)):
        r = repr(v)
        if eval(r, {"torch": torch}) != v:
            raise Unsupported(f"repr of {type(v).__name__} does not round-trip")
        return {"t": "const", "repr": r}
    raise Unsupported(type(v).__name__)

def wrap(name, orig):
    def wrapper(*args, **kwargs):
        if depth[0] == 0:
            try:
                calls.append({"fn": name, "args": [describe(a) for a in args],
                              "kwargs": {k: describe(v) for k, v in kwargs.items()}})
            except Unsupported as exc:
                calls.append({"fn": name, "unsupported": str(exc)})
        depth[0] += 1
        try:
            return orig(*args, **kwargs)
        finally:
            depth[0] -= 1
    return wrapper

for name in names:
    mod.__dict__[name] = wrap(name, mod.__dict__[name])
ns = dict(mod.__dict__)
ns["__name__"] = "__main__"
try:
    exec(compile(test_src, "test_" + stem + ".py", "exec"), ns)
    error = None
except BaseException as exc:
    error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
print("@@CALLS@@" + json.dumps({"calls": calls, "error": error}))
"""


def split_source(text: str) -> tuple[str, str]:
    """(reference part, test part) of a TritonBench-T data file; ValueError without a separator line."""
    parts = SEPARATOR.split(text, maxsplit=1)
    if len(parts) != 2:
        raise ValueError("no '####...' separator between reference and test code")
    return parts[0], parts[1]


def function_name(reference: str, stem: str, op_name: str) -> str:
    """The reference function: the op's last dotted name if defined, else the file stem, else the 1st def."""
    defs = re.findall(r"^def\s+([A-Za-z_]\w*)\s*\(", reference, re.M)
    for candidate in (op_name.split(".")[-1], stem):
        if candidate in defs:
            return candidate
    if not defs:
        raise ValueError("no top-level function in the reference part")
    return defs[0]


def on_cpu(test: str) -> str:
    """The test code with its CUDA device requests pointed at the CPU."""
    test = re.sub(r"""(['"])cuda(:\d+)?\1""", "'cpu'", test)
    test = re.sub(r"\.cuda\(\s*\)", ".cpu()", test)
    return test


def reference_on_cpu(reference: str) -> str:
    """A TritonBench-G operator moved to the CPU the way its test is: device strings, ``.cuda()``, and its
    own ``x.is_cuda`` checks (the CPU stands in for the GPU it was written for) read ``x.is_cpu``."""
    return re.sub(r"\.is_cuda\b", ".is_cpu", on_cpu(reference))


def _score(call: dict) -> tuple[int, int]:
    def numel(d: dict) -> int:
        if d["t"] == "tensor":
            n = 1
            for s in d["shape"]:
                n *= s
            return n
        if d["t"] in ("list", "tuple"):
            return sum(numel(i) for i in d["items"])
        return 0

    has_out = "out" in call["kwargs"] and call["kwargs"]["out"]["t"] != "const"
    total = sum(numel(a) for a in call["args"]) + sum(numel(v) for v in call["kwargs"].values())
    return (0 if has_out else 1, total)


def data_file(stem: str, bench: str) -> str:
    return f"data/TritonBench_{bench}_v1/{stem}.py"


def derive(snapshot: Path, stem: str, op_name: str, python: str, timeout: float, bench: str = "T") -> dict:
    """A spec from one operator's test. TritonBench-G: every function of the operator file is recorded
    (the entry point is the one its test calls most) and the operator runs in Triton's CPU interpreter."""
    text = subprocess.run(
        ["git", "-C", str(snapshot), "show", f"HEAD:{data_file(stem, bench)}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    reference, test = split_source(text)
    fn = function_name(reference, stem, op_name) if bench == "T" else "*"
    with tempfile.TemporaryDirectory() as tmp:
        ref_path, test_path = Path(tmp, "ref.py"), Path(tmp, "test.py")
        ref_path.write_text(reference if bench == "T" else reference_on_cpu(reference))
        test_path.write_text(on_cpu(test))
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
        if bench == "G":
            env["TRITON_INTERPRET"] = "1"
        try:
            proc = subprocess.run(
                [python, "-c", _CHILD, stem, fn, str(ref_path), str(test_path)],
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=tmp,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return {"function": fn, "skipped": "test code timed out on CPU"}
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@CALLS@@")]
    if not marker:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"function": fn, "skipped": f"recorder failed: {tail[:200]}"}
    found = json.loads(marker[-1][len("@@CALLS@@") :])
    if fn == "*":  # the entry point: the function the test calls most (first called on a tie)
        counts: dict[str, int] = {}
        for c in found["calls"]:
            counts[c["fn"]] = counts.get(c["fn"], 0) + 1
        if not counts:
            return {"function": "", "skipped": f"no function called: {found['error'] or 'never called'}"}
        fn = max(counts, key=lambda name: counts[name])
        found["calls"] = [c for c in found["calls"] if c["fn"] == fn]
    usable = [c for c in found["calls"] if "unsupported" not in c]
    if not usable:
        reasons = sorted({c["unsupported"] for c in found["calls"]}) or [found["error"] or "never called"]
        return {"function": fn, "skipped": f"no usable call: {'; '.join(reasons)[:200]}"}
    best = max(usable, key=_score)
    return {"function": fn, "args": best["args"], "kwargs": best["kwargs"], "test_error": found["error"]}


_VALIDATE = r"""
import importlib.util, json, os, sys
import torch
if os.environ.get("TRITON_INTERPRET") == "1":  # the judge's own interpreter shims (autotune, libdevice)
    from kernel_medic.tools.sandbox import interpreter_shims
    interpreter_shims.install()
spec = importlib.util.spec_from_file_location("reference", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
torch.manual_seed(0)
inputs = mod.get_inputs()
outs = []
for seed in (1, 2):
    torch.manual_seed(seed)
    args = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    out = mod.Model(*mod.get_init_inputs())(*args)
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    if not flat or not all(isinstance(t, torch.Tensor) for t in flat):
        print("@@VALID@@" + json.dumps("output is not a tensor or a tuple of tensors")); sys.exit()
    outs.append(flat)
bad = None
for a, b in zip(*outs):
    if a.is_floating_point() and not torch.isfinite(a).all():
        bad = "non-finite output on random inputs"
    elif a.shape != b.shape or not torch.equal(a, b):
        bad = "stochastic: two seeds give different outputs on the same inputs"
print("@@VALID@@" + json.dumps(bad))
"""


def validate(
    snapshot: Path, stem: str, spec: dict, python: str, timeout: float, bench: str = "T"
) -> str | None:
    """Why the reference built from `spec` is unusable (fails, non-finite, stochastic), or None."""
    sys.path.insert(0, str(HERE))
    import build

    text = subprocess.run(
        ["git", "-C", str(snapshot), "show", f"HEAD:{data_file(stem, bench)}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    part = build.reference_part(text)
    try:
        source = build.reference_source(part if bench == "T" else reference_on_cpu(part), spec, stem)
    except ValueError as exc:
        return str(exc)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "reference.py")
        path.write_text(source)
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
        if bench == "G":
            env["TRITON_INTERPRET"] = "1"
        try:
            proc = subprocess.run(
                [python, "-c", _VALIDATE, str(path)],
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=tmp,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return "reference timed out"
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@VALID@@")]
    if not marker:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"reference fails on generated inputs: {tail[:200]}"
    return json.loads(marker[-1][len("@@VALID@@") :])


def one(args: argparse.Namespace, specs: dict, entry: dict) -> tuple[str, dict] | None:
    stem = entry["file"].removesuffix(".py")
    key = stem if args.bench == "T" else f"G:{stem}"
    if args.validate_only:
        spec = specs.get(key)
        if spec is None or "skipped" in spec:
            return None
    else:
        spec = derive(args.snapshot, stem, entry.get("name", stem), sys.executable, args.timeout, args.bench)
    spec["name"] = entry.get("name", stem)
    if args.bench == "G":
        spec.update(bench="G", op=stem, data_file=data_file(stem, "G"))
    if "skipped" not in spec:
        problem = validate(args.snapshot, stem, spec, sys.executable, args.timeout, args.bench)
        if problem:
            spec["skipped"] = problem
    print(f"{key}: {spec.get('skipped', 'ok')}", flush=True)
    return key, spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True, type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "specs.json")
    parser.add_argument("--bench", choices=["T", "G"], default="T", help="TritonBench-T or TritonBench-G")
    parser.add_argument("--ops", default="", help="comma-separated file stems (default: all)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--validate-only", action="store_true", help="recheck the references of a specs file")
    args = parser.parse_args(argv)
    index = "data/TritonBench_T_v1.jsonl" if args.bench == "T" else "data/TritonBench_G_v1.json"
    meta = json.loads(
        subprocess.run(
            ["git", "-C", str(args.snapshot), "show", f"HEAD:{index}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    wanted = {s for s in args.ops.split(",") if s}
    specs = json.loads(args.out.read_text()) if args.out.exists() else {}
    order = [s for s in args.ops.split(",") if s]  # --ops order first (e.g. smallest operators first)
    entries = [e for e in meta if not wanted or e["file"].removesuffix(".py") in wanted]
    entries.sort(key=lambda e: order.index(e["file"].removesuffix(".py")) if order else 0)
    lock = threading.Lock()

    def run(entry: dict) -> None:
        found = one(args, specs, entry)
        if found is not None:
            with lock:  # written after every operator, so a long run can be used (or resumed) part way
                specs[found[0]] = found[1]
                args.out.write_text(json.dumps(dict(sorted(specs.items())), indent=1) + "\n")

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        list(pool.map(run, entries))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
