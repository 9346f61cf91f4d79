"""What runs inside a sandboxed child: build the reference or the candidate and run one case.

These functions execute untrusted code (the candidate; the reference too, which the harness trusts no more
than it must). They only ever run in a forked child of a worker (see `tools/sandbox/pool.py`); their results
go back as plain tensors and primitives, and every judgement (comparison, canaries, mutated inputs) is made by
the caller from that data, so a candidate that tampers with this process cannot fake a verdict.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import torch
from kernel_medic.tools.evaluation.cases import apply_value_variant, make_noncontiguous
from kernel_medic.tools.evaluation.numerics import float64_outputs

# Elements of canary padding on each side of a harness-controlled buffer. A tail-block overrun writes at most
# BLOCK-1 elements past the end, so this catches the usual off-by-a-block write without costing much memory.
CANARY_PAD = 4096
# Canaries are exact bit patterns, not just "NaN": a kernel that reads past an input (getting its canary) and
# stores past an output must still damage the output's canary. Floats use signalling-NaN patterns that
# arithmetic never produces, with one pattern for inputs and another for allocations.
_FLOAT_CANARY_BITS = {
    2: {"input": 0x7D5A, "alloc": 0x7CA5},
    4: {"input": 0x7FA5A5A5, "alloc": 0x7F85A5A5},
    8: {"input": 0x7FF4A5A5A5A5A5A5, "alloc": 0x7FF45A5A5A5A5A5A},
}
_BFLOAT16_CANARY_BITS = {"input": 0x7FA5, "alloc": 0x7F9A}
_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


class PhaseError(Exception):
    """An exception raised by the user's code, tagged with the phase it happened in."""

    def __init__(self, phase: str, exc: BaseException) -> None:
        super().__init__(f"{phase}: {type(exc).__name__}: {exc}")
        self.phase = phase
        self.exc = exc


def reference_case(payload: dict[str, Any]) -> dict[str, Any]:
    """Build the reference under the case's seed, make the case's inputs and run the reference once.

    payload: source, filename, case (CaseSpec.to_dict()), device.
    """
    case = payload["case"]
    device = payload.get("device", "cpu")
    try:
        module = _phase("import", lambda: _import_source(payload["source"], payload["filename"]))
        seed = int(case["seed"])
        torch.manual_seed(seed)
        init_inputs = _phase("init", lambda: list(module.get_init_inputs()))
        torch.manual_seed(seed)
        model = _phase("init", lambda: module.Model(*init_inputs).to(device))
        torch.manual_seed(seed)
        inputs = _phase("inputs", lambda: list(module.get_inputs()))
        inputs = _shape_inputs(inputs, case, seed)
        # Clones: the inputs handed back must be pristine even if the reference works in place.
        worked_on = [_clone(x) for x in inputs]
        outputs = _phase("forward", lambda: _run(model, worked_on, device))
    except PhaseError as err:
        return {"error": _describe(err)}
    # A reference that updates an input in place (`y.copy_(...)`) makes that update part of the contract.
    updated = [
        (i, after.detach().cpu())
        for i, (before, after) in enumerate(zip(inputs, worked_on))
        if isinstance(before, torch.Tensor) and not _unchanged(before, after)
    ]
    float64 = float64_outputs(model, [_clone(x) for x in inputs], lambda m, xs: _run(m, xs, device))
    return {
        "init_inputs": init_inputs,
        "inputs": inputs,
        "outputs": outputs,
        "outputs64": float64[0] if float64 else None,
        "outputs64p": float64[1] if float64 else None,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "inputs_updated": updated,
    }


def candidate_case(payload: dict[str, Any]) -> dict[str, Any]:
    """Build ModelNew like the reference was built and run it on the case's inputs (twice when asked).

    payload: source, filename, seed, init_inputs, inputs, state_dict (the reference's), runs, device.
    Returns outputs per run, the inputs as they were after the first run, the canary pads of every
    harness-controlled buffer, whether weights were copied, and interpreter notes.
    """
    device = payload.get("device", "cpu")
    seed = int(payload["seed"])
    _drain_work()  # counted from here: this candidate's own kernels
    arena = _open_arena(payload, device)
    try:
        module = _phase("import", lambda: _import_source(payload["source"], payload["filename"]))
        torch.manual_seed(seed)
        model = _phase("init", lambda: module.ModelNew(*payload["init_inputs"]).to(device))
        weights = _phase("init", lambda: _adopt_weights(model, payload["state_dict"]))
        held = _phase("init", lambda: _pad_parameters(model))
        runs: list[list[torch.Tensor]] = []
        inputs_after: list[torch.Tensor] = []
        canaries: list[dict[str, Any]] = []
        for run in range(int(payload.get("runs", 1))):
            buffers: list[tuple[str, torch.Tensor, int]] = []
            first = arena if run == 0 else None  # the first run's buffers live where the caller reads them
            inputs = [_input_copy(first, i, x, device, buffers) for i, x in enumerate(payload["inputs"])]
            with _canary_allocations(buffers, first):
                outputs = _phase("forward", lambda inputs=inputs: _run(model, inputs, device))
            # Own copies: arena-backed views of one shared file as several dtypes cannot be saved back.
            runs.append([_own(t) for t in outputs])
            if run == 0:
                inputs_after = [_own(x) for x in inputs]
                canaries = [_pads(label, buf, span) for label, buf, span in [*held, *buffers]]
    except PhaseError as err:
        return {"error": _describe(err), "notes": _drain_notes()}
    return {
        "outputs": runs[0],
        "repeat_outputs": runs[1] if len(runs) > 1 else None,
        "inputs_after": inputs_after,
        "canaries": canaries,
        "arena_table": arena.table if arena is not None else [],
        "weights": weights,
        "notes": _drain_notes(),
        **_drain_work(),
    }


def _open_arena(payload: dict[str, Any], device: str) -> Any:
    """The caller's evidence file mapped shared (cpu only), or None (see arena.py)."""
    if device != "cpu" or not payload.get("evidence_file") or "arena" not in payload:
        return None
    return Arena(payload["evidence_file"], int(payload["evidence_size"]), payload["arena"])


def _input_copy(arena: Any, i: int, x: Any, device: str, buffers: list[tuple[str, torch.Tensor, int]]) -> Any:
    copy = arena.input_copy(i, x) if arena is not None else None
    return copy if copy is not None else _padded_copy(x, device, f"input {i}", buffers)


def _phase(phase: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # the user's code may raise anything; the phase is what we report
        raise PhaseError(phase, exc) from exc


def _describe(err: PhaseError) -> dict[str, Any]:
    exc = err.exc
    frames = traceback.extract_tb(exc.__traceback__)
    innermost = frames[-1].filename if frames else ""
    from_triton = type(exc).__module__.startswith("triton") or any(
        part in innermost for part in (f"triton{os.sep}language", f"triton{os.sep}compiler")
    )
    return {
        "phase": err.phase,
        "type": type(exc).__name__,
        "message": _message(exc),
        "from_triton": from_triton,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-12:]),
        **_crash_site(exc),
    }


def _message(exc: BaseException) -> str:
    """The exception's first line; for a Triton CompilationError, its reason.

    A GPU backend compiles the kernel and reports a failure as a CompilationError whose text starts with the
    location and a source excerpt ("at 14:16:" ...) and ends with the reason, its `error_message` (or its
    cause). The interpreter never raises one; on an H200 a non-power-of-2 `tl.arange` read only "at 14:16:".
    """
    if hasattr(exc, "node") and hasattr(exc, "error_message"):
        reason = exc.error_message or (repr(exc.__cause__) if exc.__cause__ is not None else "")
        if isinstance(reason, str) and reason.strip():
            return reason.strip().splitlines()[-1]
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def _crash_site(exc: BaseException) -> dict[str, Any]:
    """Where the user's file was when `exc` was raised, for the caller to explain the crash (crashes.py).

    The interpreter re-raises a kernel's error as an InterpreterError from its own frames, so the chain of
    causes is walked: `frames` are the (line, function) of every frame in a file this harness wrote
    (`kmedic-src-*`), outermost first, over the whole chain; `cause` is the innermost exception's type and
    message (the real one); `raised_in` the file it was raised in; a Triton CompilationError adds its
    kernel-relative line and the kernel's first source line.
    """
    chain: list[BaseException] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen and len(chain) < 8:
        seen.add(id(cur))
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    frames: list[list[Any]] = []
    for item in chain:  # a wrapper's traceback holds the outer frames, its cause's the deeper ones
        for frame in traceback.extract_tb(item.__traceback__):
            if "kmedic-src-" in frame.filename and [frame.lineno, frame.name] not in frames:
                frames.append([frame.lineno, frame.name])
    if isinstance(exc, SyntaxError) and exc.lineno and "kmedic-src-" in (exc.filename or ""):
        frames.append([exc.lineno, "<module>"])
    inner = chain[-1]
    inner_tb = traceback.extract_tb(inner.__traceback__)
    site: dict[str, Any] = {
        "frames": frames[-16:],
        "cause": f"{type(inner).__name__}: {str(inner).strip()[:600]}",
        "cause_module": type(inner).__module__,
        "raised_in": inner_tb[-1].filename if inner_tb else "",
        "detail": str(exc).strip()[:2000],
    }
    node = getattr(exc, "node", None)
    src = getattr(exc, "src", None)
    if node is not None and isinstance(getattr(node, "lineno", None), int) and isinstance(src, str):
        site["kernel_line"] = node.lineno
        site["kernel_first_line"] = src.strip().splitlines()[0] if src.strip() else ""
    return site


def _import_source(source: str, filename: str) -> ModuleType:
    # Triton's @jit reads kernel source through inspect, so the module must live in a real file; keeping the
    # user's file name makes tracebacks point at the line numbers they know.
    folder = tempfile.mkdtemp(prefix="kmedic-src-")
    path = os.path.join(folder, os.path.basename(filename))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    name = os.path.splitext(os.path.basename(filename))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _shape_inputs(inputs: list[Any], case: dict[str, Any], seed: int) -> list[Any]:
    variant = case.get("value_variant")
    if variant:
        gen = torch.Generator().manual_seed(seed * 1000 + 17)
        inputs = [apply_value_variant(x, variant, gen) if isinstance(x, torch.Tensor) else x for x in inputs]
    if case.get("noncontiguous"):
        inputs = [make_noncontiguous(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    return inputs


def _run(model: torch.nn.Module, inputs: list[Any], device: str) -> list[torch.Tensor]:
    args = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        out = model(*args)
    if device != "cpu":
        getattr(torch, device).synchronize()
    return [t.detach().cpu() for t in _flatten(out)]


def _own(x: Any) -> Any:
    """A copy on the cpu with the same strides (clone() makes gapped strides contiguous), or x as it is."""
    if not isinstance(x, torch.Tensor):
        return x
    x = x.detach().cpu()
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype).copy_(x)


def _unchanged(before: torch.Tensor, after: torch.Tensor) -> bool:
    same = before.shape == after.shape and before.dtype == after.dtype and bool(torch.equal(before, after))
    if same or not before.is_floating_point() or before.shape != after.shape:
        return same
    nans = before.isnan()
    return bool(torch.equal(nans, after.isnan()) and torch.equal(before.nan_to_num(), after.nan_to_num()))


def _clone(x: Any) -> Any:
    return x.clone() if isinstance(x, torch.Tensor) else x


def _flatten(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in _flatten(item)]
    if isinstance(out, (int, float, bool)):
        return [torch.tensor(out)]
    raise TypeError(f"forward returned {type(out).__name__}, expected tensors")


def _adopt_weights(model: torch.nn.Module, reference_state: dict[str, torch.Tensor]) -> str:
    own = model.state_dict()
    same = own.keys() == reference_state.keys() and all(own[k].shape == reference_state[k].shape for k in own)
    if own and same:
        model.load_state_dict(reference_state)
        return "copied"
    return "seeded" if own else "none"


def _pad_parameters(model: torch.nn.Module) -> list[tuple[str, torch.Tensor, int]]:
    """Move every parameter and floating buffer of `model` into a canary-padded buffer, in place.

    A K loop that masks x but not the weight reads past the weight's end only on its last rows; unpadded, that
    memory is whatever follows (often finite, times a masked 0), so the read passes unseen. Padded, it reads
    the input canary, a NaN that reaches the output, and a write past a weight damages the pad.
    """
    out: list[tuple[str, torch.Tensor, int]] = []
    seen: set[int] = set()
    for prefix, module in model.named_modules():
        slots = [(n, t, True) for n, t in module._parameters.items()]
        slots += [(n, t, False) for n, t in module._buffers.items()]
        for name, t, is_param in slots:
            if t is None or t.numel() == 0 or id(t) in seen or not t.is_floating_point():
                continue
            seen.add(id(t))
            label = f"parameter {prefix + '.' if prefix else ''}{name}"
            view = _padded_copy(t.detach(), t.device, label, out)
            if is_param:
                t.data = view
            else:
                module._buffers[name] = view
    return out


def canary_bits(dtype: torch.dtype, kind: str) -> tuple[torch.dtype, int] | None:
    """(integer view dtype, bit pattern) of the canary for this dtype; None for bool (no canary)."""
    if dtype == torch.bool or dtype.is_complex:
        return None
    size = dtype.itemsize
    if dtype == torch.bfloat16:
        return torch.int16, _BFLOAT16_CANARY_BITS[kind]
    if dtype.is_floating_point:
        return _INT_VIEW[size], _FLOAT_CANARY_BITS[size][kind]
    info = torch.iinfo(dtype)
    if info.min < 0:
        return dtype, info.min + (7 if kind == "input" else 13)
    return dtype, 0xA5 if kind == "input" else 0x5A


def _padded_buffer(
    span: int, dtype: torch.dtype, device: Any, kind: str, alloc: Callable[..., torch.Tensor]
) -> torch.Tensor:
    buf = alloc(span + 2 * CANARY_PAD, dtype=dtype, device=device)
    bits = canary_bits(dtype, kind)
    if bits is not None:
        view_dtype, pattern = bits
        buf.view(view_dtype).fill_(pattern)
    return buf


def _padded_copy(x: Any, device: str, label: str, buffers: list[tuple[str, torch.Tensor, int]]) -> Any:
    """A copy of input x (same values, shape and strides) inside a canary-padded buffer."""
    if not isinstance(x, torch.Tensor) or x.numel() == 0:
        return x.clone() if isinstance(x, torch.Tensor) else x
    span = 1 + sum((s - 1) * st for s, st in zip(x.shape, x.stride()))
    buf = _padded_buffer(span, x.dtype, device, "input", torch.empty)
    view = buf.as_strided(x.shape, x.stride(), CANARY_PAD)
    view.copy_(x.to(device))
    buffers.append((label, buf, span))
    return view


def _pads(label: str, buf: torch.Tensor, span: int) -> dict[str, Any]:
    return {
        "label": label,
        "kind": "input" if label.startswith(("input", "parameter")) else "alloc",
        "before": buf[:CANARY_PAD].detach().cpu().clone(),
        "after": buf[CANARY_PAD + span :].detach().cpu().clone(),
    }


@contextmanager
def _canary_allocations(buffers: list[tuple[str, torch.Tensor, int]], arena: Any = None) -> Iterator[None]:
    """Route the forward pass's plain allocations through canary-padded, poison-filled buffers.

    `torch.empty*` come back NaN-filled (integers: a sentinel) so a kernel that leaves part of its output
    unwritten shows it instead of passing on stale memory; every buffer gets canaries on both sides so an
    out-of-bounds store is seen. Only the simple, common forms are rerouted; the rest go to torch unchanged.
    With an ``arena`` (arena.py) cpu buffers are carved from the caller's evidence file, whose pads the caller
    reads itself; they are not added to ``buffers``.
    """
    originals = {
        "empty": torch.empty,
        "zeros": torch.zeros,
        "empty_like": torch.empty_like,
        "zeros_like": torch.zeros_like,
    }
    counter = {"n": 0}

    def make(shape: tuple[int, ...], dtype: torch.dtype, device: Any, poison: bool) -> torch.Tensor:
        numel = 1
        for s in shape:
            numel *= int(s)
        label = f"allocation {counter['n']}"
        on_cpu = torch.device(device).type == "cpu"
        buf = arena.allocate(max(numel, 1), dtype, label) if arena is not None and on_cpu else None
        if buf is None:
            buf = _padded_buffer(max(numel, 1), dtype, device, "alloc", originals["empty"])
            buffers.append((label, buf, max(numel, 1)))
        body = buf[CANARY_PAD : CANARY_PAD + numel]
        if not poison or dtype == torch.bool:
            body.zero_()
        elif dtype.is_floating_point:
            body.fill_(float("nan"))  # a quiet NaN: unwritten output shows as NaN, apart from the canary
        counter["n"] += 1
        return body.view(shape)

    def poisoned(t: torch.Tensor, poison: bool) -> torch.Tensor:
        # A form left to torch still must not hand the kernel stale memory: a run's unwritten output
        # would then differ from run to run, and so would the verdict's evidence.
        if poison and isinstance(t, torch.Tensor) and t.numel():
            if t.dtype.is_floating_point:
                t.fill_(float("nan"))
            elif (bits := canary_bits(t.dtype, "alloc")) is not None:
                t.fill_(bits[1])
            else:
                t.zero_()
        return t

    def simple(kwargs: dict[str, Any]) -> bool:
        return (
            kwargs.get("out") is None
            and kwargs.get("layout", torch.strided) == torch.strided
            and not kwargs.get("requires_grad", False)
            and kwargs.get("memory_format") in (None, torch.contiguous_format)
            and not kwargs.get("pin_memory", False)
            and set(kwargs)
            <= {"dtype", "device", "layout", "requires_grad", "memory_format", "out", "pin_memory"}
        )

    def factory(name: str, poison: bool) -> Callable[..., torch.Tensor]:
        original = originals[name]

        def allocate(*size: Any, **kwargs: Any) -> torch.Tensor:
            shape = (
                tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
            )
            if not simple(kwargs) or not all(isinstance(s, int) for s in shape):
                fresh = original(*size, **kwargs)
                return fresh if kwargs.get("out") is not None else poisoned(fresh, poison)
            dtype = kwargs.get("dtype") or torch.get_default_dtype()
            return make(tuple(shape), dtype, kwargs.get("device") or "cpu", poison)

        return allocate

    def like_factory(name: str, poison: bool) -> Callable[..., torch.Tensor]:
        original = originals[name]

        def allocate(input: torch.Tensor, **kwargs: Any) -> torch.Tensor:
            fmt = kwargs.pop("memory_format", torch.preserve_format)
            contiguous = fmt == torch.contiguous_format or (
                fmt == torch.preserve_format and input.is_contiguous()
            )
            if not contiguous or not simple(kwargs):
                return poisoned(original(input, memory_format=fmt, **kwargs), poison)
            dtype = kwargs.get("dtype") or input.dtype
            return make(tuple(input.shape), dtype, kwargs.get("device") or input.device, poison)

        return allocate

    replacements = {
        "empty": factory("empty", True),
        "zeros": factory("zeros", False),
        "empty_like": like_factory("empty_like", True),
        "zeros_like": like_factory("zeros_like", False),
    }
    for name, fn in replacements.items():
        setattr(torch, name, fn)
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)


ARENA_ALIGN = 64


def arena_align(n: int) -> int:
    return (n + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN


class Arena:
    """The caller's evidence file mapped shared (arena.py): inputs copied in, allocations carved in order."""

    def __init__(self, path: str, size: int, plan: dict[str, Any]) -> None:
        self.buf = torch.from_file(path, shared=True, size=size, dtype=torch.uint8)
        self.plan = plan
        self.cursor = int(plan["alloc_start"])
        self.table: list[dict[str, Any]] = []
        self._slots = {int(s["index"]): s for s in plan["inputs"]}

    def input_copy(self, index: int, x: Any) -> torch.Tensor | None:
        """Input ``index`` (same values, shape and strides) inside its padding; None when it has no slot."""
        slot = self._slots.get(index)
        if slot is None or not isinstance(x, torch.Tensor) or str(x.dtype) != f"torch.{slot['dtype']}":
            return None
        size = (int(slot["span"]) + 2 * CANARY_PAD) * x.element_size()
        buf = self.buf[slot["offset"] : slot["offset"] + size].view(x.dtype)
        # as_strided's offset counts from the start of the storage, not of the slice: add the slot's.
        view = buf.as_strided(x.shape, x.stride(), buf.storage_offset() + CANARY_PAD)
        view.copy_(x)
        return view

    def allocate(self, numel: int, dtype: torch.dtype, label: str) -> torch.Tensor | None:
        """A padded buffer of ``numel`` elements, its pads holding the allocation canary; None: no room."""
        bits = canary_bits(dtype, "alloc")
        if bits is None:
            return None
        start = arena_align(self.cursor)
        size = (numel + 2 * CANARY_PAD) * dtype.itemsize
        if start + size > int(self.plan["alloc_end"]):
            return None
        buf = self.buf[start : start + size].view(dtype)
        view_dtype, pattern = bits
        buf.view(view_dtype).fill_(pattern)
        self.table.append({"label": label, "offset": start, "numel": numel, "dtype": str(dtype)})
        self.cursor = start + size
        return buf


def _drain_work() -> dict[str, int]:
    if os.environ.get("TRITON_INTERPRET") != "1":
        return {}
    from kernel_medic.tools.sandbox import interpreter_shims

    return interpreter_shims.drain_work()


def _drain_notes() -> list[str]:
    if os.environ.get("TRITON_INTERPRET") != "1":
        return []
    from kernel_medic.tools.sandbox import interpreter_shims

    return interpreter_shims.drain_notes()
