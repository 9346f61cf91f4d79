"""What runs inside a sandboxed child for the integrity audit (dynamic checks).

`reference_audit` runs the reference on the audit's inputs and records which torch functions it calls;
`candidate_audit` runs ModelNew on the same inputs several times in a row (then many more times, for sleepers)
under `HostComputeGuard`, a dispatcher-level mode entered before the candidate is imported that blocks every
ATen op but glue, with every Triton launch counted by wrappers the candidate cannot name, and the lines of the
candidate that ran traced. Judgement happens in the caller (`tools/integrity/gate.py`) from the plain tensors,
counts and records returned here.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
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
    _unchanged,
)
from kernel_medic.tools.evaluation.numerics import float64_outputs
from kernel_medic.tools.integrity.extent import reduction_extent, tensors_in
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

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


class _RecordExtent(TorchDispatchMode):
    """The longest reduction among the reference's ATen ops (values folded into one result)."""

    def __init__(self) -> None:
        super().__init__()
        self.longest = 1

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if name not in GLUE_ATEN:
            self.longest = max(self.longest, reduction_extent(name, args, kwargs, out))
        return out


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
        recorder, extent = _RecordOps(), _RecordExtent()
        outputs: dict[str, list[torch.Tensor]] = {}
        updated: list[tuple[int, torch.Tensor]] = []
        for name, inputs in sets.items():
            copies = [_clone(x) for x in inputs]
            with recorder if name == "a" else nullcontext(), extent if name == "a" else nullcontext():
                outputs[name] = _phase("forward", lambda copies=copies: _run(model, copies, device))
            if name == "a":  # what the reference updates in place is part of its contract (see the evaluator)
                updated = [
                    (i, after.detach().cpu())
                    for i, (before, after) in enumerate(zip(inputs, copies))
                    if isinstance(before, torch.Tensor) and not _unchanged(before, after)
                ]
    except PhaseError as err:
        return {"error": _describe(err)}
    float64 = {
        name: float64_outputs(model, [_clone(x) for x in inputs], lambda m, xs: _run(m, xs, device))
        for name, inputs in sets.items()
    }
    return {
        "init_inputs": init_inputs,
        "inputs": sets,
        "outputs": outputs,
        "outputs64": {name: pair[0] if pair else None for name, pair in float64.items()},
        "outputs64p": {name: pair[1] if pair else None for name, pair in float64.items()},
        "ops": sorted(recorder.ops),
        "longest_reduction": extent.longest,
        "inputs_updated": updated,
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
    """Run ModelNew on the audit's inputs in one model instance, every step under the host-compute guard.

    payload: source, filename, seed, init_inputs, state_dict, inputs ({"a", "b", "random"}), device, and
    optionally many (a list of "a"/"b" naming the inputs of each call of the sleeper run) and many_budget_s.
    The guard (a dispatcher-level mode) is entered before the candidate is imported and judges every ATen op
    through import, __init__, forward and every launch; launches are counted by wrappers installed before the
    import, in closures the candidate's module cannot name. Runs in order: a, a again, b, a's buffers refilled
    in place with b (skipped, and said, when b's shapes differ), random, then the sleeper run. Returns per
    run: outputs (or error), launches, blocked ops, host epilogue ops; plus the inputs of the first run after
    it, the lines of the candidate that ran, and any blocked op outside forward.
    """
    device = payload.get("device", "cpu")
    sets = payload["inputs"]
    guard = HostComputeGuard(payload.get("host_fold_cap"))
    coverage = _Coverage()
    result: dict[str, Any] = {"runs": {}, "inputs_after": [], "blocked": [], "tampered": [], "skipped": []}
    with _launch_log(guard) as log, _locked_modes(guard), guard:
        try:
            module = guard.phase(
                "import", coverage, lambda: _import_source(payload["source"], payload["filename"])
            )
            torch.manual_seed(int(payload["seed"]))
            model = guard.phase("init", coverage, lambda: module.ModelNew(*payload["init_inputs"]).to(device))
            guard.phase("init", coverage, lambda: _adopt_weights(model, payload["state_dict"]))
        except PhaseError as err:
            result.update(error=_describe(err), blocked=guard.hits, lines=coverage.report(), launches=log[0])
            return result
        result["blocked"] = list(guard.hits)
        kept: list[Any] = []
        for run in ("a", "a_again", "b", "b_in_place", "random"):
            buffers: list[tuple[str, torch.Tensor, int]] = []
            if run == "b_in_place":
                if not _same_layout(kept, sets["b"]):
                    # Inputs whose shapes follow the seed (a random number of entries) cannot be refilled.
                    result["skipped"].append("seed B's inputs have other shapes: no in-place refill")
                    continue
                for buf, new in zip(kept, sets["b"]):
                    if isinstance(buf, torch.Tensor):
                        buf.copy_(new)
                inputs = kept
            else:
                source = sets["a" if run == "a_again" else run]
                inputs = [_padded_copy(x, device, f"input {i}", buffers) for i, x in enumerate(source)]
            result["runs"][run] = _audited_run(model, inputs, device, buffers, guard, log, coverage)
            if run == "a":
                kept = inputs
                result["inputs_after"] = [
                    _clone(x.detach().cpu()) if isinstance(x, torch.Tensor) else x for x in inputs
                ]
        if payload.get("many"):
            result["many"] = _many_calls(model, payload, device, guard, log)
        result["lines"] = coverage.report()
        result["tampered"] = guard.tampered
    return result


def _same_layout(kept: list[Any], new: list[Any]) -> bool:
    """Whether every tensor of `new` fits the buffer of `kept` it would be copied into."""
    return all(
        not isinstance(a, torch.Tensor) or (isinstance(b, torch.Tensor) and a.shape == b.shape)
        for a, b in zip(kept, new)
    )


def _audited_run(
    model: torch.nn.Module,
    inputs: list[Any],
    device: str,
    buffers: list[Any],
    guard: HostComputeGuard,
    log: list[int],
    coverage: _Coverage | None,
) -> dict[str, Any]:
    before, hits, epilogue = log[0], len(guard.hits), len(guard.epilogue)
    guard.protect(inputs, model)
    try:
        with _canary_allocations(buffers):
            outputs = guard.phase("forward", coverage, lambda: _guarded_call(model, inputs, device))
        error = None
    except PhaseError as err:
        outputs, error = None, _describe(err)
    run: dict[str, Any] = {
        "launches": log[0] - before,
        "blocked": guard.hits[hits:],
        "epilogue": guard.epilogue[epilogue:],
    }
    if error is not None:
        run["error"] = error
    else:
        run["outputs"], run["plain"] = outputs
    return run


def _guarded_call(model: torch.nn.Module, inputs: list[Any], device: str) -> tuple[list[torch.Tensor], bool]:
    """forward on the inputs: its outputs as plain cpu tensors, and whether each was a plain Tensor."""
    args = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        out = model(*args)
    if device != "cpu":
        getattr(torch, device).synchronize()
    flat = _flatten_plain(out)
    plain = all(type(t) is torch.Tensor for t in flat)
    with torch._C.DisableTorchFunctionSubclass():  # a subclass's own methods never run on our side
        tensors = [torch.Tensor.detach(t).cpu().as_subclass(torch.Tensor) for t in flat]
    return tensors, plain


def _flatten_plain(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in _flatten_plain(item)]
    if type(out) in (int, float, bool):
        return [torch.tensor(out)]
    raise TypeError(f"forward returned {type(out).__name__}, expected tensors")


def _many_calls(
    model: torch.nn.Module, payload: dict[str, Any], device: str, guard: HostComputeGuard, log: list[int]
) -> dict[str, Any]:
    """The sleeper run: forward called many times in this one process, alternating inputs at random."""
    order: list[str] = list(payload["many"])
    budget = float(payload.get("many_budget_s", 60.0))
    start = time.monotonic()
    outputs: list[list[torch.Tensor]] = []
    before, hits = log[0], len(guard.hits)
    error = None
    for name in order:
        inputs = [_clone(x) for x in payload["inputs"][name]]
        guard.protect(inputs, model)  # memory is reused between calls: kernel-written is per call
        try:
            got, plain = guard.phase(
                "forward", None, lambda inputs=inputs: _guarded_call(model, inputs, device)
            )
        except PhaseError as err:
            error = _describe(err)
            break
        outputs.append(got if plain else [])
        if time.monotonic() - start > budget:
            break
    return {
        "order": order[: len(outputs)],
        "outputs": outputs,
        "launches": log[0] - before,
        "blocked": guard.hits[hits:],
        "error": error,
    }


# -- the host-compute guard -------------------------------------------------------------------------------

# ATen ops (overload packet names) that allocate, copy, cast, view or lay out memory: glue, allowed anywhere.
GLUE_ATEN = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill", "fill_", "zero_",
    "copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "clone", "contiguous", "detach",
    "detach_", "alias", "lift", "lift_fresh", "lift_fresh_copy", "view", "_unsafe_view", "reshape",
    "_reshape_alias", "as_strided", "as_strided_", "expand", "permute", "transpose", "transpose_", "t", "t_",
    "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "select", "slice", "split", "split_with_sizes",
    "unsafe_split", "chunk", "unbind", "narrow", "unflatten", "flatten", "cat", "stack", "constant_pad_nd",
    "arange", "set_", "resize_", "resize_as_", "scalar_tensor", "view_as_real", "view_as_complex", "_conj",
    "resolve_conj", "resolve_neg", "movedim", "_has_compatible_shallow_copy_type", "record_stream",
    "_pin_memory", "is_pinned", "expand_copy", "view_copy", "permute_copy", "slice_copy", "_unsafe_index_put",
}  # fmt: skip
# Random fills and constant grids: building weights in __init__ (nn.Linear's own init, a buffer of edges).
INIT_ATEN = {
    "uniform_", "normal_", "random_", "bernoulli_", "exponential_", "randperm", "linspace", "logspace", "eye",
    "randn", "rand", "randint", "normal", "uniform", "bernoulli",
}  # fmt: skip
# Arithmetic __init__ may do on what random fills and constants gave (a weight scaled by 1/sqrt(fan_in), a
# gamma of 1 + 0.1 * randn): it cannot read an input, and the reference's state dict replaces the weights.
INIT_SCALE_ATEN = {
    "mul", "div", "add", "sub", "rsub", "neg", "abs", "sqrt", "rsqrt", "reciprocal", "clamp", "clamp_min",
    "clamp_max", "mul_", "div_", "add_", "sub_", "neg_", "abs_", "clamp_", "sqrt_", "pow",
}  # fmt: skip
# Tensors __init__ creates from nothing (torch.ones(C) * 0.5 is a constant, like a random fill).
INIT_CONSTANT_ATEN = {
    "ones", "zeros", "full", "empty", "arange", "scalar_tensor", "lift_fresh", "lift_fresh_copy",
}  # fmt: skip
# The last steps a host may take over buffers a kernel wrote (summing per-block partials, a mean's division
# by a size): allowed only when every tensor operand is kernel-written memory and the host folds at most
# the payload's host_fold_cap values into each result; reported as notes.
EPILOGUE_ATEN = {"sum", "mean", "amax", "amin", "max", "min", "logsumexp", "div", "add"}
_CANDIDATE_MARK = "kmedic-src-"


class HostCompute(RuntimeError):
    """Raised when the candidate's code computes with ATen on the host instead of launching its kernel."""


class HostComputeGuard(TorchDispatchMode):
    """Judges every ATen op at the dispatcher, below torch functions, overloads, aliases and TorchScript.

    Glue ops always pass. Any other op is blocked while a candidate phase (import, __init__, forward and
    the launches inside it) runs, or whenever a frame of the candidate's file is on the Python stack (a
    hook or finalizer running later); __init__ may also fill weights at random. The Triton interpreter only
    moves memory with glue ops and computes with numpy on raw pointers, so launches need no exemption: a grid
    callable or a pre-run hook that computes with torch is blocked like forward itself.
    """

    def __init__(self, fold_cap: int | None = None) -> None:
        super().__init__()
        self.armed = ""
        self.hits: list[dict[str, Any]] = []
        self.epilogue: list[str] = []
        self.tampered: list[str] = []
        self.written: set[int] = set()
        # How many kernel-written values the host may fold into one result (None: no limit), and how many
        # each epilogue result already folds: a chain of small sums is one long sum.
        self.fold_cap = fold_cap
        self.folded: dict[int, int] = {}
        self.count_storages: set[int] = set()
        self.protected: set[int] = set()
        self.init_made: set[int] = set()  # storages __init__ filled (random, constants) or computed

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in GLUE_ATEN:
            out = func(*args, **kwargs)
            if self.armed == "init" and name in INIT_CONSTANT_ATEN:
                self.init_made |= {_storage(t) for t in tensors_in(out)}  # a constant: as harmless
            return out
        line = _candidate_line()
        if not self.armed and line is None:
            return func(*args, **kwargs)
        if self.armed == "init" and (
            name in INIT_ATEN or _innermost_torch_init() or self._scales_fill(name, args)
        ):
            out = func(*args, **kwargs)
            self.init_made |= {_storage(t) for t in tensors_in(out)}
            return out
        if name in EPILOGUE_ATEN and self.armed == "forward" and self._on_written(name, args, kwargs):
            out = func(*args, **kwargs)
            folded = reduction_extent(name, args, kwargs, out) * max(
                (self.folded.get(_storage(t), 1) for t in tensors_in((args, kwargs))), default=1
            )
            self._check_fold(name, folded, "kernel-written values", line)
            self.epilogue.append(name)
            for t in tensors_in(out):
                self.written.add(_storage(t))
                self.folded[_storage(t)] = folded
            return out
        if self.armed == "forward" and self._counts(name, args):
            out = func(*args, **kwargs)  # (t != ignore_index).sum(): how many entries a mean divides by
            if name == "sum":  # a count as long as the problem's reduction is the answer, not a divisor
                self._check_fold(name, reduction_extent(name, args, kwargs, out), "counted entries", line)
            self.epilogue.append(name)
            for t in tensors_in(out):
                self.count_storages.add(_storage(t))
            return out
        self.hits.append({"op": name, "phase": self.armed or "outside", "line": line or 0})
        raise HostCompute(f"host compute: aten {name} outside a kernel ({self.armed or 'callback'})")

    def _check_fold(self, name: str, folded: int, what: str, line: int | None) -> None:
        if self.fold_cap is None or folded <= self.fold_cap:
            return
        why = (
            f"folds {folded} {what} into each result, more than a quarter of the reference's longest "
            "reduction: the kernel must do most of it"
        )
        self.hits.append({"op": name, "phase": self.armed, "line": line or 0, "why": why})
        raise HostCompute(f"host compute: aten {name} {why}")

    def _scales_fill(self, name: str, args: Any) -> bool:
        """Pointwise arithmetic whose tensor operands all come from __init__'s fills (0.1 * randn)."""
        tensors = tensors_in(args)
        born = self.init_made
        return name in INIT_SCALE_ATEN and bool(tensors) and all(_storage(t) in born for t in tensors)

    def _on_written(self, name: str, args: Any, kwargs: Any) -> bool:
        tensors = tensors_in((args, kwargs))
        if name == "div" and len(tensors) == 2 and _storage(tensors[0]) in self.written:
            return _storage(tensors[1]) in self.count_storages  # a kernel's sum over a count of entries
        if not tensors or not all(_storage(t) in self.written for t in tensors):
            return False
        if name == "div":
            scalars = [a for a in args[1:] if not isinstance(a, torch.Tensor)]
            return len(tensors) == 1 and all(isinstance(s, int) or float(s).is_integer() for s in scalars)
        return True

    def _counts(self, name: str, args: Any) -> bool:
        """A mask of entries equal to a constant (`t != -100`) and its sum: counting, not the operator."""
        if name in ("eq", "ne") and len(args) == 2 and isinstance(args[0], torch.Tensor):
            return isinstance(args[1], (int, float, bool))
        if name == "sum" and len(args) >= 1 and isinstance(args[0], torch.Tensor):
            return args[0].dtype == torch.bool and _storage(args[0]) in self.count_storages
        return False

    def protect(self, inputs: list[Any], model: torch.nn.Module) -> None:
        """Inputs and weights are never kernel-written memory, whatever a kernel is handed."""
        self.written = set()
        self.folded = {}
        self.count_storages = set()
        self.protected = {_storage(t) for t in tensors_in(inputs)}
        self.protected |= {_storage(t) for t in list(model.parameters()) + list(model.buffers())}

    def launched(self, args: Any, kwargs: Any) -> None:
        for t in tensors_in((args, kwargs)):
            if _storage(t) not in self.protected:
                self.written.add(_storage(t))
                self.folded.pop(_storage(t), None)  # a kernel rewrote it: what it holds is kernel work

    def phase(self, phase: str, coverage: _Coverage | None, fn: Callable[[], Any]) -> Any:
        """Run one candidate phase armed (and traced for coverage); check the guard is still installed."""
        self.armed = phase
        if coverage is not None:
            coverage.start()
        try:
            return _phase(phase, fn)
        finally:
            if coverage is not None:
                coverage.stop()
            self.armed = ""
            if self not in _get_current_dispatch_mode_stack():
                self.tampered.append(f"{phase}: the host-compute guard was removed")


def _storage(t: torch.Tensor) -> int:
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return -1


def _candidate_line() -> int | None:
    """The line of the innermost frame of the candidate's own file on the stack, or None."""
    frame = sys._getframe(2)
    while frame is not None:
        if _CANDIDATE_MARK in frame.f_code.co_filename:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _innermost_torch_init() -> bool:
    """Whether torch.nn.init itself (a weight initialiser such as trunc_normal_) issued the op."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if "torch" in name and name.endswith(os.path.join("nn", "init.py")):
            return True
        if _CANDIDATE_MARK in name:
            return False
        frame = frame.f_back
    return False


class _Coverage:
    """Lines of the candidate's file that ran, traced in this child (sys.settrace, the candidate's frames)."""

    def __init__(self) -> None:
        self.lines: set[int] = set()
        self.broken = False

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and _CANDIDATE_MARK in frame.f_code.co_filename:
            self.lines.add(frame.f_lineno)
            return self._local
        return None

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines.add(frame.f_lineno)
        return self._local

    def start(self) -> None:
        sys.settrace(self._global)

    def stop(self) -> None:
        if sys.gettrace() != self._global:
            self.broken = True  # someone else's tracer: coverage unknown, and unknown counts as reached
        sys.settrace(None)

    def report(self) -> list[int] | None:
        return None if self.broken else sorted(self.lines)


# The ways to take a dispatch mode off the stack or switch Python dispatch off, in torch._C and in the module
# that wraps them: called from the candidate's code they refuse (and the attempt is reported).
_MODE_SWITCHES = (
    "_pop_torch_dispatch_stack", "_unset_dispatch_mode", "_set_dispatch_mode", "_DisableTorchDispatch",
    "_pop_mode", "_pop_mode_temporarily", "_disable_current_modes", "_push_mode",
)  # fmt: skip


@contextmanager
def _locked_modes(guard: HostComputeGuard) -> Iterator[None]:
    """While the candidate runs, its own frames may not pop, replace or disable the guard's dispatch mode."""
    from torch.utils import _python_dispatch

    patched: list[tuple[Any, str, Any]] = []

    def locked(name: str, original: Any) -> Any:
        def switch(*args: Any, **kwargs: Any) -> Any:
            line = _candidate_line()
            if line is not None:
                guard.tampered.append(f"line {line}: the candidate called torch's {name} (removes the guard)")
                raise HostCompute(f"{name} is not available to the candidate")
            return original(*args, **kwargs)

        return switch

    for owner in (torch._C, _python_dispatch):
        for name in _MODE_SWITCHES:
            original = getattr(owner, name, None)
            if original is not None:
                setattr(owner, name, locked(name, original))
                patched.append((owner, name, original))
    try:
        yield
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)


@contextmanager
def _launch_log(guard: HostComputeGuard) -> Iterator[list[int]]:
    """Count Triton launches (interpreter grid executor, JITFunction.run on devices) in a closure.

    Installed before the candidate is imported; the count lives in a list only these wrappers and this
    function hold, so module-level code in the candidate has no name for it. Each launch's tensor
    arguments become kernel-written memory for the guard's epilogue rule.
    """
    count = [0]
    depth = [0]
    patched: list[tuple[Any, str, Any]] = []
    targets: list[tuple[Any, str]] = []
    try:
        from triton.runtime import interpreter

        targets.append((interpreter.GridExecutor, "__call__"))
    except ImportError:  # a triton build without the interpreter
        pass
    from triton.runtime import jit

    targets.append((jit.JITFunction, "run"))

    def counted(original: Any) -> Any:
        def launch(*args: Any, **kwargs: Any) -> Any:
            if depth[0] == 0:
                count[0] += 1
            depth[0] += 1
            try:
                return original(*args, **kwargs)
            finally:
                depth[0] -= 1
                guard.launched(args, kwargs)

        return launch

    for owner, name in targets:
        original = getattr(owner, name)
        setattr(owner, name, counted(original))
        patched.append((owner, name, original))
    try:
        yield count
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)
