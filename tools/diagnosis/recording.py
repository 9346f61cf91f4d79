"""Recording intermediates for localisation (sandbox side, and the source rewrite the sandbox runs).

Two recordings of the same inputs, in two children (a reference and a candidate never share a process):

- the reference's forward under a TorchDispatchMode that decomposes every op it can (softmax into max, sub,
  exp, sum, div; norms into mean, var, rsqrt...) and keeps every floating result: the quantities a correct
  kernel computes on the way;
- an instrumented COPY of the candidate whose kernels call `_kmedic_rec(line, names, values)` after every
  assignment and before every `tl.store`. Under TRITON_INTERPRET a kernel body is plain Python run once per
  program, so the recorder sees each `tl` value as a numpy array, per program, in execution order. A
  store's mask drops the lanes it leaves off (a tail block's padding) from the values the program recorded
  since its last store: nothing reads them, so they are no evidence either way.

The parent (localise.py) matches the two and ranks statements.
"""

from __future__ import annotations

import ast
from typing import Any

import torch
from kernel_medic.tools.diagnosis.static_features import jit_kernels, tl_name
from kernel_medic.tools.evaluation.jobs import (
    PhaseError,
    _canary_allocations,
    _describe,
    _drain_notes,
    _phase,
    _run,
)

RECORD_CANDIDATE_JOB = "kernel_medic.tools.diagnosis.recording:record_candidate"
RECORD_REFERENCE_JOB = "kernel_medic.tools.diagnosis.recording:record_reference"
PER_KEY = 8192
"""Most values kept per recorded (line, name): the first programs' values are enough to judge agreement."""
WRITES = 200_000
"""Most output addresses whose writing program is remembered, per store."""
REFERENCE_BUDGET = 4_000_000
"""Most reference values kept in all (a recording is a diagnosis aid, not a copy of every buffer)."""

# Appended (never prepended): the instrumented copy keeps the candidate's line numbers above it.
_RECORDER = """

_KMEDIC_RECORDS = {}
_KMEDIC_PENDING = []
_KMEDIC_WRITES = {}


def _kmedic_rec(line, names, values, mask=None, store=False, pointer=None):
    import numpy as _np

    if pointer is not None:
        _kmedic_written(line, pointer, mask)

    for name, value in zip(names, values):
        data = getattr(getattr(value, "handle", None), "data", value)
        try:
            arr = _np.asarray(data)
        except Exception:
            continue
        if arr.dtype.kind != "f" or arr.size == 0:
            continue
        key = (int(line), str(name))
        kept = _KMEDIC_RECORDS.setdefault(key, [0, []])
        if kept[0] >= PER_KEY_VALUE:
            continue
        flat = _np.array(arr, dtype=_np.float64).ravel()[: PER_KEY_VALUE - kept[0]]
        kept[0] += flat.size
        kept[1].append(flat)
        _KMEDIC_PENDING.append((kept, len(kept[1]) - 1, arr))
    if store:
        _kmedic_live(mask)


def _kmedic_written(line, pointer, mask):
    # Which program stores to each address: one output element stored by two programs is a mapping of
    # programs onto the output that is not one-to-one (a missing batch or row term, a tile decomposition
    # that repeats), whatever the values.
    import numpy as _np

    try:
        from triton.runtime.interpreter import interpreter_builder

        program = tuple(int(i) for i in interpreter_builder.grid_idx)
        addr = _np.asarray(getattr(getattr(pointer, "handle", None), "data", pointer)).astype(_np.uint64)
        if mask is not None:
            live = _np.asarray(getattr(getattr(mask, "handle", None), "data", mask)).astype(bool)
            if live.ndim:
                addr = addr[_np.broadcast_to(live, addr.shape)]
            elif not live:
                addr = addr[:0]
    except Exception:
        return
    seen = _KMEDIC_WRITES.setdefault(int(line), [{}, 0, 0])
    for a in addr.ravel()[: max(0, WRITES_VALUE - len(seen[0]))].tolist():
        first = seen[0].setdefault(a, program)
        seen[1] += 1
        seen[2] += first != program


def _kmedic_live(mask):
    # At a store: the lanes it masks off hold nobody's values (a tail block's padding, a program past the
    # end), so they are dropped from what this program recorded since its last store, wherever a value's
    # shape lines up with the mask's.
    import numpy as _np

    if mask is not None:
        data = getattr(getattr(mask, "handle", None), "data", mask)
        try:
            live = _np.asarray(data).astype(bool)
        except Exception:
            live = None
        for kept, i, arr in _KMEDIC_PENDING if live is not None else []:
            if live.ndim == 0:
                alive = _np.broadcast_to(live, arr.shape)
            elif arr.ndim != live.ndim or any(
                a != m and 1 not in (a, m) for a, m in zip(arr.shape, live.shape)
            ):
                continue
            else:
                axes = tuple(d for d, (a, m) in enumerate(zip(arr.shape, live.shape)) if a == 1 and m != 1)
                alive = _np.broadcast_to(live.any(axis=axes, keepdims=True) if axes else live, arr.shape)
            old = kept[1][i]
            new = _np.array(arr[alive], dtype=_np.float64)[: old.size]
            kept[0] += new.size - old.size
            kept[1][i] = new
    _KMEDIC_PENDING.clear()
""".replace("PER_KEY_VALUE", str(PER_KEY)).replace("WRITES_VALUE", str(WRITES))


def store_argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    """An argument of a `tl.store(pointer, value, mask)` call, given by position or keyword."""
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _targets(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for elt in target.elts for n in _targets(elt)]
    return []


def _record_call(
    line: int,
    names: list[str],
    values: list[ast.expr],
    store_mask: ast.expr | None | bool = False,
    pointer: ast.expr | None = None,
) -> ast.stmt:
    """A call recording `values`; before a store (`store_mask` its mask, None without one) it also drops
    the lanes the store masks off from what the program recorded since its last store."""
    keywords = []
    if store_mask is not False:
        keywords.append(ast.keyword("store", ast.Constant(True)))
        if isinstance(store_mask, ast.expr):
            keywords.append(ast.keyword("mask", store_mask))
        if pointer is not None:
            keywords.append(ast.keyword("pointer", pointer))
    call = ast.Call(
        func=ast.Name("_kmedic_rec", ast.Load()),
        args=[
            ast.Constant(line),
            ast.Tuple([ast.Constant(n) for n in names], ast.Load()),
            ast.Tuple(values, ast.Load()),
        ],
        keywords=keywords,
    )
    return ast.Expr(call)


class _Recorder(ast.NodeTransformer):
    """After each assignment: record its targets; before each `tl.store`: record the stored value."""

    def _block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            stmt = self.visit(stmt)
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                if tl_name(stmt.value) == "store":
                    call = stmt.value
                    value, mask = store_argument(call, 1, "value"), store_argument(call, 2, "mask")
                    pointer = store_argument(call, 0, "pointer")
                    if value is not None:
                        out.append(_record_call(stmt.lineno, ["<store>"], [value], mask, pointer))
            out.append(stmt)
            if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names = [n for t in targets for n in _targets(t)]
                if names:
                    out.append(_record_call(stmt.lineno, names, [ast.Name(n, ast.Load()) for n in names]))
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, self._block(block))
        return node


def instrument_for_recording(source: str) -> str:
    """The candidate with every jit kernel recording its values (line numbers as in `source`)."""
    tree = ast.parse(source)
    kernels = jit_kernels(tree)
    if not kernels:
        raise ValueError("no @triton.jit kernel to record")
    for fn in kernels:
        fn.body = _Recorder()._block(fn.body)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + _RECORDER


def record_candidate(payload: dict[str, Any]) -> dict[str, Any]:
    """Run the instrumented ModelNew once; return its outputs and {line, name, values} per recorded key.

    payload: source (instrumented), filename, seed, init_inputs, inputs, state_dict, device (as run_model).
    """
    from kernel_medic.tools.diagnosis.jobs import _build

    device = payload.get("device", "cpu")
    try:
        module, model, _init, _weights = _build(payload)
        with _canary_allocations([]):
            outputs = _phase("forward", lambda: _run(model, list(payload["inputs"]), device))
    except PhaseError as err:
        return {"error": _describe(err), "notes": _drain_notes()}
    import numpy as np

    records = getattr(module, "_KMEDIC_RECORDS", {})
    out = [
        {"line": line, "name": name, "values": torch.from_numpy(np.concatenate(kept[1]))}
        for (line, name), kept in records.items()
    ]
    writes = [
        {"line": line, "stored": stored, "collisions": collisions}
        for line, (_seen, stored, collisions) in getattr(module, "_KMEDIC_WRITES", {}).items()
    ]
    return {"outputs": outputs, "records": out, "writes": writes, "notes": _drain_notes()}


def float_tensors(value: Any) -> list[torch.Tensor]:
    """The floating-point tensors inside nested tuples and lists."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, tuple | list):
        return [t for v in value for t in float_tensors(v)]
    return []


def record_reference(payload: dict[str, Any]) -> dict[str, Any]:
    """Run Model once under a decomposing dispatch mode; return its outputs and every float intermediate."""
    from kernel_medic.tools.diagnosis.jobs import _build
    from torch._decomp import decomposition_table
    from torch.utils._python_dispatch import TorchDispatchMode

    kept: list[torch.Tensor] = []
    budget = [REFERENCE_BUDGET]

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            decompose = decomposition_table.get(func)
            result: Any = NotImplemented
            if decompose is not None:
                try:
                    with self:
                        result = decompose(*args, **kwargs)
                except Exception:  # a decomposition that cannot run here: the op itself will
                    result = NotImplemented
            if result is NotImplemented:
                result = func(*args, **kwargs)
            for t in float_tensors(result):
                if 0 < t.numel() <= budget[0]:
                    budget[0] -= t.numel()
                    kept.append(t.detach().to(torch.float64).reshape(-1).clone())
            return result

    device = payload.get("device", "cpu")
    try:
        _module, model, _init, _weights = _build({**payload, "model": "Model"})
        with Recorder():
            outputs = _phase("forward", lambda: _run(model, list(payload["inputs"]), device))
    except PhaseError as err:
        return {"error": _describe(err)}
    return {"outputs": outputs, "intermediates": kept}
