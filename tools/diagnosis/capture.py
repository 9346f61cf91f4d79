"""Intermediate capture: where inside the kernel do values first go wrong?

A COPY of the candidate is rewritten (ast) so that every kernel assignment whose value is a reduction
(`tl.max`/`tl.min`/`tl.sum`, possibly scaled: row max, row sum, mean, variance) or a `tl.dot` accumulation
also stores that value into an extra debug buffer: one pointer parameter per quantity on the kernel, one
keyword argument per quantity at each launch, the buffer allocated in the wrapper just before the launch.
The copy runs in the sandbox; the parent computes the same quantities from the reference's inputs in
PyTorch (float64) and reports, in program order, which match and the first that does not.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

import torch
from kernel_medic.tools.diagnosis.static_features import jit_kernels, tl_name
from kernel_medic.tools.evaluation.cases import CaseSpec
from kernel_medic.tools.evaluation.problem import Problem
from kernel_medic.tools.sandbox.pool import SandboxLimits, WorkerPool

CAPTURE_JOB = "kernel_medic.tools.diagnosis.jobs:capture_run"
REFERENCE_JOB = "kernel_medic.tools.evaluation.jobs:reference_case"
_REDUCTIONS = {"max", "min", "sum"}
_PID = (
    "(tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)"
    " + tl.program_id(2) * tl.num_programs(0) * tl.num_programs(1))"
)
# Appended (never prepended) so the instrumented copy keeps the candidate's line numbers above it.
_HELPERS = """

_KMEDIC_CAPTURE = []


def _kmedic_buffer(name, grid, meta, elems, shape, args):
    import torch as _torch

    if callable(grid):
        grid = grid(meta)
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    programs = 1
    for g in grid:
        programs *= int(g)
    device = next((a.device for a in args if isinstance(a, _torch.Tensor)), "cpu")
    buf = _torch.full((max(programs * int(elems), 1),), float("nan"), dtype=_torch.float32, device=device)
    _KMEDIC_CAPTURE.append((name, buf, programs, tuple(int(s) for s in shape)))
    return buf
"""


class CaptureUnsupported(Exception):
    """The kernel has nothing capturable, or a form the rewrite does not handle (one-line reason)."""


@dataclass
class Quantity:
    name: str  # the kernel variable
    line: int  # its assignment's line in the original source
    reduction: str  # max | min | sum | dot
    shape: list[ast.expr] = field(default_factory=list)  # tile shape (kernel-side expressions); [] = scalar


@dataclass
class Instrumented:
    source: str
    quantities: list[Quantity]


def _reduction_of(value: ast.expr, scalars: set[str]) -> str | None:
    """The reduction when `value` is a reduction, optionally scaled by scalars (`tl.sum(x) / N`)."""
    if isinstance(value, ast.Call) and tl_name(value) in _REDUCTIONS:
        return tl_name(value)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div | ast.Mult | ast.Add | ast.Sub):
        for side, other in ((value.left, value.right), (value.right, value.left)):
            names = {n.id for n in ast.walk(other) if isinstance(n, ast.Name)}
            if names <= scalars and not any(isinstance(n, ast.Call) for n in ast.walk(other)):
                red = _reduction_of(side, scalars)
                if red is not None:
                    return red
    return None


def _dot_target(stmt: ast.stmt) -> str | None:
    """`acc` for `acc += tl.dot(...)`, `acc = tl.dot(a, b, acc)` or `acc = acc + tl.dot(...)`."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        if any(isinstance(n, ast.Call) and tl_name(n) == "dot" for n in ast.walk(stmt.value)):
            return stmt.target.id
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        name = stmt.targets[0].id
        reads = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        if name in reads and any(
            isinstance(n, ast.Call) and tl_name(n) == "dot" for n in ast.walk(stmt.value)
        ):
            return name
    return None


def _zeros_shape(fn: ast.FunctionDef, name: str) -> list[ast.expr] | None:
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and isinstance(node.value, ast.Call)
            and tl_name(node.value) in ("zeros", "full")
            and node.value.args
            and isinstance(node.value.args[0], ast.Tuple | ast.List)
        ):
            return list(node.value.args[0].elts)
    return None


def _find_quantities(fn: ast.FunctionDef) -> list[tuple[ast.stmt, Quantity]]:
    params = {a.arg for a in fn.args.args}
    two_d = any(isinstance(n, ast.Constant) and n.value is None for n in ast.walk(fn))
    found: list[tuple[ast.stmt, Quantity]] = []
    for stmt in ast.walk(fn):
        if not isinstance(stmt, ast.stmt) or stmt is fn:
            continue
        acc = _dot_target(stmt)
        if acc is not None:
            shape = _zeros_shape(fn, acc)
            if shape is not None and len(shape) == 2:
                found.append((stmt, Quantity(acc, stmt.lineno, "dot", shape)))
            continue
        # Scalars per program only: in a 2-D (multi-row) kernel a reduction is a vector of unknown length.
        if two_d or not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0]
        if not isinstance(target, ast.Name):
            continue
        red = _reduction_of(stmt.value, params)
        if red is not None:
            found.append((stmt, Quantity(target.id, stmt.lineno, red)))
    # One entry per variable (its first assignment fixes the program order; later ones overwrite).
    seen: set[str] = set()
    unique = []
    for stmt, q in sorted(found, key=lambda sq: sq[1].line):
        if q.name not in seen:
            seen.add(q.name)
            unique.append((stmt, q))
    return unique


def _store_stmt(q: Quantity, ptr: str) -> ast.stmt:
    if not q.shape:
        return ast.parse(f"tl.store({ptr} + {_PID}, {q.name})").body[0]
    s0, s1 = (ast.unparse(e) for e in q.shape)
    offs = f"{_PID} * (({s0}) * ({s1})) + tl.arange(0, {s0})[:, None] * ({s1}) + tl.arange(0, {s1})[None, :]"
    return ast.parse(f"tl.store({ptr} + {offs}, {q.name})").body[0]


class _InsertAfter(ast.NodeTransformer):
    def __init__(self, after: dict[int, list[ast.stmt]]) -> None:
        self.after = after

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(node, attr, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                new: list[ast.stmt] = []
                for stmt in block:
                    new.append(stmt)
                    new.extend(self.after.get(id(stmt), []))
                setattr(node, attr, new)
        return node


def instrument(source: str) -> Instrumented:
    """An instrumented copy of `source`. Raises CaptureUnsupported with the reason when it cannot."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise CaptureUnsupported(f"the candidate does not parse: {exc.msg}") from exc
    kernels = {fn.name: fn for fn in jit_kernels(tree)}
    if not kernels:
        raise CaptureUnsupported("no @triton.jit kernel")
    plans: dict[str, list[tuple[str, Quantity]]] = {}
    after: dict[int, list[ast.stmt]] = {}
    for fn in kernels.values():
        if fn.args.defaults or fn.args.kwonlyargs or fn.args.vararg:
            continue  # appended pointer parameters would need defaults
        for stmt, q in _find_quantities(fn):
            param = f"kmedic_dbg_{sum(len(p) for p in plans.values())}"
            plans.setdefault(fn.name, []).append((param, q))
            after.setdefault(id(stmt), []).append(_store_stmt(q, param))
    if not plans:
        raise CaptureUnsupported(
            "no kernel assigns a reduction (tl.max/tl.sum/tl.min) or a tl.dot accumulator"
        )
    tree = _InsertAfter(after).visit(tree)
    for name, plan in plans.items():
        kernels[name].args.args += [ast.arg(arg=param) for param, _ in plan]
    launched = _instrument_launches(tree, kernels, plans)
    if not launched:
        raise CaptureUnsupported("no launch of an instrumented kernel found (launched indirectly?)")
    ast.fix_missing_locations(tree)
    quantities = [q for plan in plans.values() for _, q in plan if q.name in launched]
    return Instrumented(ast.unparse(tree) + "\n" + _HELPERS, sorted(quantities, key=lambda q: q.line))


def _bound_args(fn: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr]:
    params = [a.arg for a in fn.args.args]
    bound = dict(zip(params, call.args))
    bound.update({kw.arg: kw.value for kw in call.keywords if kw.arg})
    return bound


class _Substitute(ast.NodeTransformer):
    def __init__(self, bound: dict[str, ast.expr], missing: list[str]) -> None:
        self.bound, self.missing = bound, missing

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.bound:
            return self.bound[node.id]
        self.missing.append(node.id)
        return node


def _instrument_launches(
    tree: ast.Module, kernels: dict[str, ast.FunctionDef], plans: dict[str, list[tuple[str, Quantity]]]
) -> set[str]:
    """Allocate the debug buffers before each launch and pass them; the captured variables' names."""
    before: dict[int, list[ast.stmt]] = {}
    launched: set[str] = set()
    counter = 0
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.stmt) or isinstance(stmt, ast.FunctionDef | ast.ClassDef | ast.Module):
            continue
        for call in _own_calls(stmt):
            sub = call.func
            if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)):
                continue
            plan = plans.get(sub.value.id)
            if plan is None:
                continue
            fn = kernels[sub.value.id]
            bound = _bound_args(fn, call)
            meta = ast.Dict(keys=[ast.Constant(k) for k in bound], values=list(bound.values()))
            args = ast.List(elts=list(call.args), ctx=ast.Load())
            for param, q in plan:
                missing: list[str] = []
                dims = [
                    _Substitute(bound, missing).visit(ast.parse(ast.unparse(e), mode="eval").body)
                    for e in q.shape
                ]
                if missing:
                    continue  # a tile size the launch does not pass (autotuned): cannot size the buffer
                var = f"_kmedic_buf_{counter}"
                counter += 1
                shape = ast.Tuple(elts=dims, ctx=ast.Load())
                elems = (
                    ast.parse("1").body[0].value
                    if not dims
                    else ast.parse(" * ".join(f"({ast.unparse(d)})" for d in dims), mode="eval").body
                )
                alloc = ast.Assign(
                    targets=[ast.Name(var, ast.Store())],
                    value=ast.Call(
                        func=ast.Name("_kmedic_buffer", ast.Load()),
                        args=[ast.Constant(q.name), sub.slice, meta, elems, shape, args],
                        keywords=[],
                    ),
                    lineno=stmt.lineno,
                )
                before.setdefault(id(stmt), []).append(alloc)
                call.keywords.append(ast.keyword(arg=param, value=ast.Name(var, ast.Load())))
                launched.add(q.name)
            # Every debug parameter must be passed even if its buffer could not be sized.
            passed = {kw.arg for kw in call.keywords}
            for param, _ in plan:
                if param not in passed:
                    dummy = ast.parse("_kmedic_buffer('', (1,), {}, 1, (), [])", mode="eval").body
                    call.keywords.append(ast.keyword(arg=param, value=dummy))
    _InsertBefore(before).visit(tree)
    return launched


def _own_calls(stmt: ast.stmt) -> list[ast.Call]:
    """Calls in `stmt` itself, not in the statements nested inside it."""
    out: list[ast.Call] = []
    todo: list[ast.AST] = list(ast.iter_child_nodes(stmt))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            continue
        if isinstance(node, ast.Call):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


class _InsertBefore(ast.NodeTransformer):
    def __init__(self, before: dict[int, list[ast.stmt]]) -> None:
        self.before = before

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(node, attr, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                new: list[ast.stmt] = []
                for stmt in block:
                    new.extend(self.before.get(id(stmt), []))
                    new.append(stmt)
                setattr(node, attr, new)
        return node


# ---------------------------------------------------------------------------------------------------------
# The reference side: the same quantities from the reference's inputs, in float64


def operator_family(reference_source: str) -> str | None:
    text = reference_source.lower()
    for family, keys in (
        ("logsumexp", ("logsumexp",)),
        ("softmax", ("softmax",)),
        ("layernorm", ("layer_norm", "layernorm")),
        ("rmsnorm", ("rms_norm", "rmsnorm")),
        ("matmul", ("matmul", "torch.mm", ".mm(", " @ ", "bmm", "nn.linear", "f.linear")),
    ):
        if any(k in text for k in keys):
            return family
    return None


def reference_quantities(family: str, inputs: list[Any]) -> dict[str, list[torch.Tensor]]:
    """Named per-row (or per-output, for matmul) quantities of the reference's computation."""
    tensors = [x.double() for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not tensors:
        return {}
    x = tensors[0]
    if family == "matmul":
        if len(tensors) < 2:
            return {}
        a, b = tensors[0], tensors[1]
        return {"acc": [a @ b, a @ b.transpose(-1, -2)]} if a.shape[-1] == b.shape[-1] else {"acc": [a @ b]}
    rows = x.reshape(-1, x.shape[-1])
    mx = rows.amax(-1)
    if family in ("softmax", "logsumexp"):
        return {
            "max": [mx],
            "min": [rows.amin(-1)],
            "sum": [torch.exp(rows - mx[:, None]).sum(-1), torch.exp(rows).sum(-1)],
        }
    if family == "layernorm":
        mean = rows.mean(-1)
        return {
            "mean": [mean],
            "var": [rows.var(-1, unbiased=False)],
            "sum": [rows.sum(-1)],
            "max": [mx],
            "min": [rows.amin(-1)],
        }
    if family == "rmsnorm":
        return {
            "var": [(rows * rows).mean(-1)],
            "mean": [(rows * rows).mean(-1)],
            "sum": [(rows * rows).sum(-1)],
        }
    return {}


_NAME_KINDS = (
    (re.compile(r"mean|^mu$|avg"), "mean"),
    (re.compile(r"var|sigma|^ms$|sq"), "var"),
    (re.compile(r"max|^m_i$|^m$"), "max"),
    (re.compile(r"min"), "min"),
    (re.compile(r"sum|den|norm|^l$|^l_i$|^z$|^s$|total"), "sum"),
    (re.compile(r"acc"), "acc"),
)


def quantity_kind(q: Quantity, family: str, order: int) -> str:
    """Which reference quantity a kernel variable stands for: its name first, then its reduction."""
    if q.reduction == "dot":
        return "acc"
    low = q.name.lower()
    for pattern, kind in _NAME_KINDS:
        if pattern.search(low):
            return kind
    if q.reduction in ("max", "min"):
        return q.reduction
    if family == "layernorm":
        return "mean" if order == 0 else "var"
    return "sum"


def _closeness(got: torch.Tensor, want: torch.Tensor) -> tuple[bool, float]:
    got, want = got.double(), want.double()
    scale = float(want[torch.isfinite(want)].abs().max()) if bool(torch.isfinite(want).any()) else 1.0
    atol = 1e-4 * max(scale, 1.0)
    both_finite = torch.isfinite(got) & torch.isfinite(want)
    nonfinite_mismatch = bool((torch.isfinite(got) != torch.isfinite(want)).any())
    err = float((got - want)[both_finite].abs().max()) if bool(both_finite.any()) else 0.0
    ok = not nonfinite_mismatch and bool(
        torch.allclose(got[both_finite], want[both_finite], rtol=1e-3, atol=atol)
    )
    return ok, (float("inf") if nonfinite_mismatch else err)


def _compare_scalar(
    values: torch.Tensor, programs: int, refs: list[torch.Tensor]
) -> tuple[bool, float] | str:
    got = values[:programs]
    options = [r for r in refs if r.numel() == programs]
    if not options:
        return f"{programs} programs but {refs[0].numel()} reference rows"
    results = [_closeness(got, r) for r in options]
    return (
        (True, min(e for ok, e in results if ok))
        if any(ok for ok, _ in results)
        else (False, min(e for _, e in results))
    )


def _compare_tiles(
    values: torch.Tensor, programs: int, shape: list[int], refs: list[torch.Tensor]
) -> tuple[bool, float]:
    s0, s1 = shape
    tiles = values[: programs * s0 * s1].reshape(programs, s0, s1).double()
    best: tuple[bool, float] = (False, float("inf"))
    for ref in refs:
        c = ref.reshape(-1, ref.shape[-2], ref.shape[-1])[0]
        m, n = c.shape
        all_ok, worst = True, 0.0
        for tile in tiles:
            tile_best: tuple[bool, float] = (False, float("inf"))
            for i in range(0, m, s0):
                for j in range(0, n, s1):
                    want = c[i : i + s0, j : j + s1]
                    got = tile[: want.shape[0], : want.shape[1]]
                    ok, err = _closeness(got, want)
                    if ok or err < tile_best[1]:
                        tile_best = (ok, err) if ok or not tile_best[0] else tile_best
                    if ok:
                        break
                if tile_best[0]:
                    break
            all_ok &= tile_best[0]
            worst = max(worst, tile_best[1])
        if all_ok:
            return (True, worst)
        if worst < best[1]:
            best = (False, worst)
    return best


def compare_captures(
    quantities: list[Quantity], captured: list[dict[str, Any]], family: str, inputs: list[Any]
) -> dict[str, Any]:
    refs = reference_quantities(family, inputs)
    out: list[dict[str, Any]] = []
    unmapped: list[dict[str, Any]] = []
    scalar_order = 0
    for q in quantities:
        records = [c for c in captured if c["name"] == q.name]
        kind = quantity_kind(q, family, scalar_order)
        if q.reduction != "dot":
            scalar_order += 1
        if not records:
            unmapped.append({"name": q.name, "line": q.line, "reason": "never launched"})
            continue
        if kind not in refs:
            unmapped.append({"name": q.name, "line": q.line, "reason": f"no reference {kind} for {family}"})
            continue
        rec = records[0]
        if q.reduction == "dot":
            verdict: tuple[bool, float] | str = _compare_tiles(
                rec["values"], rec["programs"], rec["shape"], refs[kind]
            )
        else:
            verdict = _compare_scalar(rec["values"], rec["programs"], refs[kind])
        if isinstance(verdict, str):
            unmapped.append({"name": q.name, "line": q.line, "reason": verdict})
            continue
        ok, err = verdict
        out.append(
            {"name": q.name, "line": q.line, "quantity": kind, "matches": ok, "max_abs_err": _json_float(err)}
        )
    first = next((q["name"] for q in out if not q["matches"]), None)
    return {
        "kind": "capture",
        "family": family,
        "quantities": out,
        "first_divergence": first,
        "unmapped": unmapped,
    }


def _json_float(value: float) -> float | None:
    return None if value != value or abs(value) == float("inf") else round(value, 6)


def capture(
    problem: Problem,
    pool: WorkerPool,
    device: str = "cpu",
    value_variant: str | None = None,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    """Run an instrumented copy of the candidate on the reference's inputs; which quantity diverges first.

    Returns {kind: "capture", quantities: [{name, line, quantity, matches, max_abs_err}], first_divergence,
    family, unmapped}, or {kind: "capture", skipped: reason}. max_abs_err is None when non-finite.
    """
    family = operator_family(problem.reference_source)
    if family is None:
        return {"kind": "capture", "skipped": "no known intermediate quantities for this operator"}
    try:
        inst = instrument(problem.candidate_source)
    except CaptureUnsupported as exc:
        return {"kind": "capture", "skipped": str(exc)}
    limits = SandboxLimits(timeout_s=timeout_s)
    seed = problem.config.seeds[0]
    spec = CaseSpec(name=f"seed{seed}", seed=seed, value_variant=value_variant)
    ref = pool.run(
        REFERENCE_JOB,
        {
            "source": problem.reference_source,
            "filename": problem.reference_path.name,
            "case": spec.to_dict(),
            "device": device,
        },
        limits,
    )
    if ref.status != "ok" or ref.result is None or "error" in ref.result:
        return {"kind": "capture", "skipped": "the reference does not run"}
    payload = {
        "source": inst.source,
        "filename": problem.candidate_path.name,
        "model": "ModelNew",
        "seed": seed,
        "init_inputs": ref.result["init_inputs"],
        "inputs": ref.result["inputs"],
        "state_dict": ref.result["state_dict"],
        "device": device,
    }
    run = pool.run(CAPTURE_JOB, payload, limits)
    if run.status != "ok" or run.result is None:
        return {"kind": "capture", "skipped": f"instrumented run: {run.status}: {run.error or ''}".strip()}
    if "error" in run.result:
        err = run.result["error"]
        return {"kind": "capture", "skipped": f"instrumented run: {err['type']}: {err['message']}"}
    result = compare_captures(inst.quantities, run.result["captured"], family, ref.result["inputs"])
    if value_variant:
        result["variant"] = value_variant
    return result
