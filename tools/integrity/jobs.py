"""What runs inside a sandboxed child for the integrity audit (dynamic checks).

`reference_audit` runs the reference on the audit's inputs and records which torch functions it calls;
`candidate_audit` runs ModelNew on the same inputs several times in a row with those ops poisoned (they raise
when called from forward, outside a kernel launch) and every Triton launch counted. Judgement happens in the
caller (`tools/integrity/gate.py`) from the plain tensors and counts returned here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch
from kernel_medic.tools.evaluation.jobs import (
    PhaseError,
    _adopt_weights,
    _canary_allocations,
    _clone,
    _describe,
    _import_source,
    _padded_copy,
    _phase,
    _run,
)
from kernel_medic.tools.evaluation.numerics import float64_outputs
from torch.overrides import TorchFunctionMode

# torch functions (normalised names) that allocate, copy, view, lay out or describe memory: never poisoned,
# whatever the reference uses.
GLUE_OPS = {
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill", "zero", "copy",
    "clone", "contiguous", "to", "detach", "view", "view_as", "reshape", "reshape_as", "as_strided", "expand",
    "expand_as", "permute", "transpose", "t", "squeeze", "unsqueeze", "split", "chunk", "unbind", "narrow",
    "flatten", "unflatten", "cat", "concat", "stack", "pad", "arange", "tensor", "as_tensor", "float",
    "half", "double", "bfloat16", "int", "long", "bool", "type", "cpu", "cuda", "movedim", "getitem",
    "setitem", "get", "len", "iter", "size", "stride", "numel", "dim", "ndimension", "data_ptr",
    "is_contiguous", "element_size", "storage_offset", "is_floating_point", "get_device", "format", "repr",
    "hash", "contains", "nelement", "requires_grad_", "set_", "resize_", "untyped_storage", "storage",
    "set_grad_enabled", "is_grad_enabled", "synchronize",
}  # fmt: skip
# Spellings of the same computation: a poisoned `mul` must also catch `x.multiply(...)` and `x * y`.
_SYNONYMS = {
    "multiply": "mul", "rmul": "mul", "imul": "mul", "divide": "div", "true_divide": "div", "truediv": "div",
    "rtruediv": "div", "itruediv": "div", "subtract": "sub", "rsub": "sub", "isub": "sub", "radd": "add",
    "iadd": "add", "rmatmul": "matmul", "mm": "matmul", "bmm": "matmul", "pow": "pow", "rpow": "pow",
    "neg": "neg", "negative": "neg", "clip": "clamp", "absolute": "abs", "special_softmax": "softmax",
}  # fmt: skip
_STATE: dict[str, Any] = {"launches": 0, "depth": 0}


class PoisonedOp(RuntimeError):
    """Raised when forward calls one of the reference's compute ops itself."""


def op_name(func: Any) -> str:
    """A torch function's normalised name: `Tensor.__rmul__`, `torch.multiply` and `mul_` are all `mul`."""
    name = str(getattr(func, "__name__", None) or getattr(func, "name", None) or func)
    name = name.split(".")[-1].strip("_")
    if name.endswith("_") and name not in GLUE_OPS:
        name = name.rstrip("_")
    return _SYNONYMS.get(name, name)


class _RecordOps(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.add(op_name(func))
        return func(*args, **(kwargs or {}))


class _Poison(TorchFunctionMode):
    def __init__(self, ops: set[str]) -> None:
        super().__init__()
        self.ops = ops
        self.hits: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = op_name(func)
        if name in self.ops and _STATE["depth"] == 0:
            self.hits.append(name)
            raise PoisonedOp(f"forward called the reference's op {name} outside a kernel")
        return func(*args, **(kwargs or {}))


def reference_audit(payload: dict[str, Any]) -> dict[str, Any]:
    """Build Model under seed_a; run it on seed_a's inputs, seed_b's and a randomized copy; record its ops.

    payload: source, filename, seed_a, seed_b, device.
    """
    device = payload.get("device", "cpu")
    seed_a, seed_b = int(payload["seed_a"]), int(payload["seed_b"])
    try:
        module = _phase("import", lambda: _import_source(payload["source"], payload["filename"]))
        torch.manual_seed(seed_a)
        init_inputs = _phase("init", lambda: list(module.get_init_inputs()))
        torch.manual_seed(seed_a)
        model = _phase("init", lambda: module.Model(*init_inputs).to(device))
        sets: dict[str, list[Any]] = {}
        for name, seed in (("a", seed_a), ("b", seed_b)):
            torch.manual_seed(seed)
            sets[name] = _phase("inputs", lambda: list(module.get_inputs()))
        sets["random"] = [_randomized(x, seed_b) for x in sets["a"]]
        recorder = _RecordOps()
        outputs: dict[str, list[torch.Tensor]] = {}
        for name, inputs in sets.items():
            copies = [_clone(x) for x in inputs]
            with recorder if name == "a" else nullcontext():
                outputs[name] = _phase("forward", lambda copies=copies: _run(model, copies, device))
    except PhaseError as err:
        return {"error": _describe(err)}
    outputs64 = {
        name: float64_outputs(model, [_clone(x) for x in inputs], lambda m, xs: _run(m, xs, device))
        for name, inputs in sets.items()
    }
    return {
        "init_inputs": init_inputs,
        "inputs": sets,
        "outputs": outputs,
        "outputs64": outputs64,
        "ops": sorted(recorder.ops),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }


def _randomized(x: Any, seed: int) -> Any:
    """Fresh normal values of the same shape and dtype: uniform default inputs hide partial work."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        return x
    gen = torch.Generator().manual_seed(seed * 7919 + 13)
    scale = float(x.abs().max()) if x.numel() and float(x.abs().max()) > 0 else 1.0
    values = torch.randn(x.shape, generator=gen, dtype=torch.float64) * scale
    return values.to(x.dtype)


def candidate_audit(payload: dict[str, Any]) -> dict[str, Any]:
    """Run ModelNew on the audit's inputs, poisoned and counted, in one model instance.

    payload: source, filename, seed, init_inputs, state_dict, inputs ({"a", "b", "random"}), poison (aten op
    names), device. Runs in order: a, a again, b, a's buffers refilled in place with b, random.
    Returns per run: outputs (or error), launches, and the inputs of the first run as they were after it.
    """
    device = payload.get("device", "cpu")
    sets = payload["inputs"]
    poison = set(payload.get("poison") or []) - GLUE_OPS
    try:
        module = _phase("import", lambda: _import_source(payload["source"], payload["filename"]))
        torch.manual_seed(int(payload["seed"]))
        model = _phase("init", lambda: module.ModelNew(*payload["init_inputs"]).to(device))
        _phase("init", lambda: _adopt_weights(model, payload["state_dict"]))
    except PhaseError as err:
        return {"error": _describe(err)}
    runs: dict[str, dict[str, Any]] = {}
    inputs_after: list[Any] = []
    with _count_launches():
        kept: list[Any] = []
        for run in ("a", "a_again", "b", "b_in_place", "random"):
            buffers: list[tuple[str, torch.Tensor, int]] = []
            if run == "b_in_place":
                for buf, new in zip(kept, sets["b"]):
                    if isinstance(buf, torch.Tensor):
                        buf.copy_(new)
                inputs = kept
            else:
                source = sets["a" if run == "a_again" else run]
                inputs = [_padded_copy(x, device, f"input {i}", buffers) for i, x in enumerate(source)]
            runs[run] = _audited_run(model, inputs, device, poison, buffers)
            if run == "a":
                kept = inputs
                inputs_after = [
                    _clone(x.detach().cpu()) if isinstance(x, torch.Tensor) else x for x in inputs
                ]
    return {"runs": runs, "inputs_after": inputs_after}


def _audited_run(
    model: torch.nn.Module, inputs: list[Any], device: str, poison: set[str], buffers: list[Any]
) -> dict[str, Any]:
    before = _STATE["launches"]
    mode = _Poison(poison)
    try:
        with _canary_allocations(buffers), mode:
            outputs = _phase("forward", lambda: _run(model, inputs, device))
    except PhaseError as err:
        return {"error": _describe(err), "poisoned": mode.hits[:1], "launches": _STATE["launches"] - before}
    return {"outputs": outputs, "poisoned": mode.hits[:1], "launches": _STATE["launches"] - before}


@contextmanager
def _count_launches() -> Iterator[None]:
    """Count Triton launches (interpreter grid executor, JITFunction.run on devices); no poison inside."""
    patched: list[tuple[Any, str, Any]] = []
    targets: list[tuple[Any, str]] = []
    try:
        from triton.runtime import interpreter

        targets.append((interpreter.GridExecutor, "__call__"))
    except ImportError:  # a triton build without the interpreter
        pass
    from triton.runtime import jit

    targets.append((jit.JITFunction, "run"))
    for owner, name in targets:
        original = getattr(owner, name)
        setattr(owner, name, _counted(original))
        patched.append((owner, name, original))
    try:
        yield
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)


def _counted(original: Any) -> Any:
    def launch(*args: Any, **kwargs: Any) -> Any:
        if _STATE["depth"] == 0:
            _STATE["launches"] += 1
        _STATE["depth"] += 1
        try:
            return original(*args, **kwargs)
        finally:
            _STATE["depth"] -= 1

    return launch
