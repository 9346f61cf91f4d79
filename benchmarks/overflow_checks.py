"""What the interpreter's dead int32 overflow checks cost, and proof that skipping them changes no result.

Triton's interpreter computes an int64 copy and two range comparisons for every int32 `+`, `-` and `*` on
tensors, for an assert that `device_assert` drops because the interpreter never turns `debug` on; shim 8
(tools/sandbox/interpreter_shims.py) skips that dead check. This runs each case's candidate and fix forward
four times in one forked child after an untimed first run, with the check and without it, alternating,
and reports the CPU time and interpreted work of each way and whether the outputs (NaN positions included),
the load/store lanes and the errors are identical. A case whose two runs of the same way differ reads memory
it never wrote (garbage that moves with every allocation): it is counted as nondeterministic, not compared.

Each case runs in its own forked child of this process (TRITON_INTERPRET=1 is set before triton is imported):
corpus code never runs in the agent, and a child that crashes or hangs loses only its own case.

    .venv/bin/python benchmarks/overflow_checks.py benchmarks/near_miss benchmarks/holdout6 [--json]
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported, here and in every child

import argparse
import json
import multiprocessing as mp
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import triton  # noqa: F401  (imported once here, inherited by every child)
from kernel_medic.tools.evaluation.jobs import _import_source
from kernel_medic.tools.sandbox import interpreter_shims

TIMEOUT_S = 120.0
WAYS = ("checked", "skipped", "checked", "skipped")
_ADDRESS = re.compile(r"\b(0x[0-9a-f]{6,}|\d{9,})\b")  # an address or pointer value, never a shape or size


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    nan = torch.isnan(a)
    return torch.equal(nan, torch.isnan(b)) and torch.equal(a[~nan], b[~nan])


def _forward(module: Any, init: list[Any], inputs: list[Any]) -> dict[str, Any]:
    torch.manual_seed(0)
    args = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    interpreter_shims.drain_work()
    start = time.process_time()
    try:
        with torch.no_grad():
            out = module.ModelNew(*init)(*args)
    except Exception as exc:
        interpreter_shims.drain_work()
        return {"error": f"{type(exc).__name__}: {exc}", "cpu_s": time.process_time() - start}
    cpu_s = time.process_time() - start
    work = interpreter_shims.drain_work()
    outs = out if isinstance(out, (tuple, list)) else [out]
    tensors = [t for t in [*outs, *args] if isinstance(t, torch.Tensor)]
    return {"error": None, "cpu_s": cpu_s, "tensors": tensors, "work": work}


def _agree(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["error"] is not None or b["error"] is not None:
        # a pointer's address in a message changes from run to run; the rest of the text must not
        return _ADDRESS.sub("<address>", a["error"] or "") == _ADDRESS.sub("<address>", b["error"] or "")
    lanes = ("lanes", "live_lanes")
    return (
        len(a["tensors"]) == len(b["tensors"])
        and all(_same(x, y) for x, y in zip(a["tensors"], b["tensors"]))
        and [a["work"][k] for k in lanes] == [b["work"][k] for k in lanes]
    )


def _case(case: Path, which: str, conn: Any) -> None:
    from triton.runtime import interpreter

    semantic = interpreter.interpreter_semantic
    skip = semantic.binary_op_sanitize_overflow_impl  # the shim's, installed on the instance
    try:
        ref = _import_source((case / "reference.py").read_text(), "reference.py")
        module = _import_source((case / which).read_text(), which)
        torch.manual_seed(0)
        init = list(ref.get_init_inputs()) if hasattr(ref, "get_init_inputs") else []
        torch.manual_seed(0)
        inputs = list(ref.get_inputs())
    except Exception as exc:
        conn.send({"skipped": f"cannot build inputs: {type(exc).__name__}"})
        return
    _forward(module, init, inputs)  # untimed: the first launch of each kernel also rewrites its source
    runs: dict[str, list[dict[str, Any]]] = {"checked": [], "skipped": []}
    for way in WAYS:
        if way == "checked":
            semantic.__dict__.pop("binary_op_sanitize_overflow_impl", None)  # Triton's own method again
        else:
            semantic.binary_op_sanitize_overflow_impl = skip
        runs[way].append(_forward(module, init, inputs))
    checked, skipped = runs["checked"], runs["skipped"]
    deterministic = _agree(checked[0], checked[1]) and _agree(skipped[0], skipped[1])
    conn.send(
        {
            "deterministic": deterministic,
            "identical": _agree(checked[1], skipped[1]),
            "error": checked[1]["error"] is not None,
            "cpu_s": [sum(r["cpu_s"] for r in runs[w]) for w in runs],
            "work": [sum(r["work"]["work"] for r in runs[w] if r["error"] is None) for w in runs],
        }
    )


def _run(case: Path, which: str) -> tuple[mp.Process, Any]:
    fork = mp.get_context("fork")
    parent, child = fork.Pipe(duplex=False)
    proc = fork.Process(target=_case, args=(case, which, child), daemon=True)
    proc.start()
    child.close()
    return proc, parent


def _run_all(jobs: list[tuple[Path, str]], workers: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    pending = list(jobs)
    running: list[tuple[Path, str, mp.Process, Any, float]] = []
    while pending or running:
        while pending and len(running) < workers:
            case, which = pending.pop(0)
            running.append((case, which, *_run(case, which), time.monotonic()))
        time.sleep(0.01)
        for item in list(running):
            case, which, proc, conn, started = item
            row: dict[str, Any] | None = None
            if conn.poll():
                try:
                    row = conn.recv()
                except EOFError:  # the child died without a word
                    row = {"skipped": "child died"}
                proc.join()
            elif not proc.is_alive():
                row = {"skipped": f"child died (exit code {proc.exitcode})"}
            elif time.monotonic() - started > TIMEOUT_S:
                proc.kill()
                proc.join()
                row = {"skipped": f"over {TIMEOUT_S:.0f} s"}
            if row is not None:
                running.remove(item)
                rows.append({"case": f"{case.parent.name}/{case.name}", "file": which, **row})
                print(f"[{len(rows)}/{len(jobs)}] {rows[-1]['case']} {which}", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+", type=Path, help="corpus folders (cases with reference.py)")
    parser.add_argument("--workers", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    jobs = [
        (path.parent, path.name)
        for root in args.corpora
        for path in sorted(root.glob("*/*.py"))
        if path.name in ("candidate.py", "fixed.py") and (path.parent / "reference.py").is_file()
    ]
    if not jobs:
        print(f"error: no cases with reference.py under {[str(c) for c in args.corpora]}", file=sys.stderr)
        return 2
    interpreter_shims.install()
    torch.set_num_threads(1)
    # Each child writes its modules to a temporary folder (Triton reads kernel source from a file) and exits
    # without cleaning up: one scratch folder for all of them, removed at the end, keeps /tmp clean.
    with tempfile.TemporaryDirectory(prefix="kmedic-overflow-checks-") as scratch:
        tempfile.tempdir = scratch
        try:
            rows = _run_all(jobs, args.workers)
        finally:
            tempfile.tempdir = None
    compared = [r for r in rows if "skipped" not in r and r["deterministic"]]
    checked = sum(r["cpu_s"][0] for r in compared)
    skipped = sum(r["cpu_s"][1] for r in compared)
    summary = {
        "runs": len(rows),
        "skipped": sum("skipped" in r for r in rows),
        "nondeterministic": sum("skipped" not in r and not r["deterministic"] for r in rows),
        "compared": len(compared),
        "identical": sum(r["identical"] for r in compared),
        "errors_identical": sum(r["identical"] and r["error"] for r in compared),
        "differ": [f"{r['case']} {r['file']}" for r in compared if not r["identical"]],
        "cpu_s_checked": round(checked, 3),
        "cpu_s_skipped": round(skipped, 3),
        "cpu_ratio": round(checked / skipped, 2) if skipped else None,
        "work_ratio": round(
            sum(r["work"][0] for r in compared) / max(1, sum(r["work"][1] for r in compared)), 2
        ),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
