"""Shims that let real-world Triton kernels run in Triton's CPU interpreter (TRITON_INTERPRET=1, Triton 3.x).

Each shim that changes what a kernel computes (1-5) records a note when it acts, so a result obtained
through it is never silently trusted; 6-8 change no result (they count work or skip work that has no
effect) and record none:

1. autotune: ``Autotuner.do_bench`` asks ``driver.active.get_benchmarker()``; a CPU-only host has no active
   driver. It becomes a benchmarker that times nothing and reports equal times, so the autotuner keeps its own
   logic (pruning, ``reset_to_zero``/``restore_value``, ``pre_hook``, heuristics), picks the first remaining
   config. ``Autotuner.run`` is wrapped only to record which config that was.
2. libdevice: the generic ``triton.language.extra.libdevice`` functions are empty stubs (they return None) and
   the cuda/hip ones emit ``extern_elementwise``, which the interpreter cannot run. The functions of those
   modules are replaced by numpy evaluations; ones without an equivalent raise a clear NotImplementedError.
3. float scalars: ``interpreter._implicit_cvt`` wraps int/bool/pointer arguments as tensors but leaves floats
   as Python floats, so ``eps.to(tl.float32)`` fails. Floats become fp32 scalar tensors, as in a GPU launch.
4. bfloat16: the interpreter stores bf16 as uint16 and its arithmetic is unreliable. ``GridExecutor.__call__``
   is wrapped to note launches with bf16 tensors (nothing is fixed); the wrapper also tracks the running
   kernel's name for the other notes.
5. dot shapes: the interpreter lets ``tl.dot`` take any tile (its minimum is 1 x 1 x 1), where an NVIDIA GPU
   refuses a K below 8 (32-bit), 16 (16-bit) or 32 (8-bit) and operands of different widths. A kernel the
   GPU would not compile must not pass here, so the interpreter asks for the GPU's bounds: such a kernel
   crashes as it would on the GPU (`tile_size_constraint`), with Triton's own message.
6. work: every builder op the interpreter runs adds the elements it produced to a counter (``drain_work``):
   how much a kernel computes, whatever the load on the machine and however small the case. Two correct
   edits are told apart by it: a program per element with 256 lanes each does 256 times the work. Loads and
   stores also count their lanes and the live (unmasked) ones: a loop over every element where one over
   every tile was meant leaves nearly all of its lanes masked off.
7. helper calls: the interpreter patches the language modules a ``@triton.jit`` helper sees (``tl.sum`` and
   ``tl.max`` are helpers too) at every call of every program, scanning five namespaces each time, and never
   undoes it. Inside one launch, once the launch or an earlier call has patched those modules, a helper is
   called directly: the same code runs, without a third of a small job's CPU spent on re-patching.
8. overflow checks: every int32 ``+``, ``-`` and ``*`` on tensors computes an int64 copy of its result and two
   range comparisons for an assert that ``device_assert`` then drops, since the interpreter's options never
   turn ``debug`` on (a GPU compile drops that dead code too). Without ``debug`` the check is skipped: the
   same outputs, errors and lanes, and the work counter no longer counts ops no GPU would run (up to 40% of
   an indexing-heavy kernel's interpreted time).
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

_PREFIX = "cpu interpreter: "
BF16_NOTE = _PREFIX + "bfloat16 arithmetic is unreliable on this backend; evaluate bf16 kernels on a GPU"

_notes: dict[str, None] = {}
_installed = False
_current_kernel: list[str] = []
_launch_langs: list[set[str]] = []  # the language modules patched during each running launch, innermost last
_work = {"work": 0, "lanes": 0, "live_lanes": 0}


def _note(text: str) -> None:
    _notes.setdefault(_PREFIX + text, None)


def drain_notes() -> list[str]:
    """Return the notes recorded since the last drain (deduplicated, oldest first) and forget them."""
    out = list(_notes)
    _notes.clear()
    return out


def drain_work() -> dict[str, int]:
    """The elements the interpreter's ops produced since the last drain (`work`), the lanes its loads and
    stores ran and the live ones among them; the counts restart at 0."""
    done = dict(_work)
    for key in _work:
        _work[key] = 0
    return done


def _in_kernel() -> str:
    return f" in kernel {_current_kernel[-1]}" if _current_kernel else ""


def install() -> None:
    """Patch the Triton interpreter of this process; idempotent. Call after `import triton`."""
    global _installed
    if _installed:
        return
    import triton

    if not triton.knobs.runtime.interpret:
        raise RuntimeError("interpreter shims need TRITON_INTERPRET=1 set before triton is imported")
    _patch_autotuner()
    _patch_libdevice()
    _patch_launch()
    _patch_dot_bounds()
    _patch_work()
    _patch_overflow_checks()
    _installed = True


# 1. autotune


def _describe_config(config: Any) -> str:
    parts = [f"{k}={v}" for k, v in config.kwargs.items()]
    parts += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    return ", ".join(parts)


def _patch_autotuner() -> None:
    from triton.runtime.autotuner import Autotuner

    def untimed_benchmarker(self: Any) -> Callable[..., list[float]]:
        def bench(kernel_call: Callable[[], None], quantiles: Any = None, **_: Any) -> list[float]:
            # Equal times make the autotuner's min() keep the first candidate.
            self._kmedic_untimed = True
            return [0.0, 0.0, 0.0]

        return bench

    original_run = Autotuner.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original_run(self, *args, **kwargs)
        finally:
            # Sticky: later launches reuse the untimed pick from the autotuner's cache, and say so again.
            picked = getattr(self, "best_config", None)
            if getattr(self, "_kmedic_untimed", False) and picked is not None:
                name = self.base_fn.__name__
                _note(
                    f"@triton.autotune for {name} picked config {_describe_config(picked)} "
                    f"without timing (first of {len(self.configs_timings)} configs)"
                )

    Autotuner.do_bench = property(untimed_benchmarker)
    Autotuner.run = run


# 2. libdevice


def _vectorize(fn: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    vec = np.vectorize(fn, otypes=[np.float64])
    return lambda x: vec(x).astype(x.dtype)


def _c_round(x: np.ndarray) -> np.ndarray:
    # C round(): halfway cases away from zero (numpy rounds them to even).
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _c_remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x - np.rint(x / y) * y


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": _c_round,
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(x.dtype.type(10), x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1 / np.cbrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "sinpi": lambda x: np.sin(np.pi * x),
    "cospi": lambda x: np.cos(np.pi * x),
    "erf": _vectorize(math.erf),
    "erfc": _vectorize(math.erfc),
    "lgamma": _vectorize(math.lgamma),
    "tgamma": _vectorize(math.gamma),
    "normcdf": lambda x: 0.5 * _vectorize(math.erfc)(-x / np.sqrt(2)),
    "saturatef": lambda x: np.clip(x, 0, 1),
    "fast_expf": np.exp,
    "fast_exp10f": lambda x: np.power(10.0, x),
    "fast_logf": np.log,
    "fast_log2f": np.log2,
    "fast_log10f": np.log10,
    "fast_sinf": np.sin,
    "fast_cosf": np.cos,
    "fast_tanf": np.tan,
    "fast_tanhf": np.tanh,
}
for _mode in ("rn", "rz", "rd", "ru"):
    _UNARY[f"sqrt_{_mode}"] = np.sqrt
    _UNARY[f"rcp_{_mode}"] = lambda x: 1 / x
_UNARY["rsqrt_rn"] = _UNARY["rsqrt"]

_PREDICATE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "isnan": np.isnan,
    "isinf": np.isinf,
    "finitef": np.isfinite,
    "isfinited": np.isfinite,
    "signbit": np.signbit,
}

_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pow": np.power,
    "fast_powf": np.power,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "fmod": np.fmod,
    "remainder": _c_remainder,
    "copysign": np.copysign,
    "nextafter": np.nextafter,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "fdim": lambda x, y: np.maximum(x - y, 0),
    "fast_dividef": np.divide,
}
for _mode in ("rn", "rz", "rd", "ru"):
    _BINARY[f"div_{_mode}"] = np.divide
    _BINARY[f"add_{_mode}"] = np.add
    _BINARY[f"sub_{_mode}"] = np.subtract
    _BINARY[f"mul_{_mode}"] = np.multiply

_TERNARY: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    name: (lambda x, y, z: x * y + z) for name in ("fma", "fma_rn", "fma_rz", "fma_rd", "fma_ru")
}


def _float_operands(args: tuple[Any, ...]) -> list[Any]:
    """Operands as broadcast tensors of one float dtype (fp32, or fp64 if any is fp64)."""
    import triton.language as tl
    from triton.runtime.interpreter import interpreter_semantic as sem

    tensors = [sem.to_tensor(a) for a in args]
    common = tl.float64 if any(t.dtype == tl.float64 for t in tensors) else tl.float32
    tensors = [t if t.dtype == common else sem.cast(t, common) for t in tensors]
    for i in range(1, len(tensors)):
        tensors[0], tensors[i] = sem.broadcast_impl_value(tensors[0], tensors[i])
    for i in range(1, len(tensors) - 1):
        tensors[i], _ = sem.broadcast_impl_value(tensors[i], tensors[0])
    return tensors


def _make_tensor(data: np.ndarray, like: Any, dtype: Any) -> Any:
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    ty = like.type.with_element_ty(dtype) if like.type.is_block() else dtype
    return tl.tensor(TensorHandle(np.ascontiguousarray(data), dtype), ty)


def _libdevice_fn(name: str, arity: int, op: Callable[..., np.ndarray], predicate: bool = False) -> Callable:
    def fn(*args: Any, _semantic: Any = None, **_: Any) -> Any:
        import triton.language as tl

        if len(args) != arity:
            raise TypeError(f"libdevice.{name} takes {arity} argument(s), got {len(args)}")
        _note(f"libdevice.{name}{_in_kernel()} evaluated with numpy (there is no libdevice on the CPU)")
        tensors = _float_operands(args)
        with np.errstate(all="ignore"):
            data = op(*(t.handle.data for t in tensors))
        if predicate:
            return _make_tensor(data.astype(np.int32), tensors[0], tl.int32)
        dtype = tensors[0].dtype
        return _make_tensor(data.astype(tensors[0].handle.data.dtype), tensors[0], dtype)

    fn.__name__ = name
    return fn


def _abs(x: Any, _semantic: Any = None, **_: Any) -> Any:
    import triton.language as tl
    from triton.runtime.interpreter import interpreter_semantic as sem

    _note(f"libdevice.abs{_in_kernel()} evaluated with numpy (there is no libdevice on the CPU)")
    t = sem.to_tensor(x)
    if t.dtype.is_floating() and t.dtype not in (tl.float32, tl.float64):
        t = sem.cast(t, tl.float32)
    return _make_tensor(np.abs(t.handle.data), t, t.dtype)


def _unsupported(module: str, name: str) -> Callable:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{module}.{name} has no CPU-interpreter equivalent; run this kernel on a GPU"
        )

    fn.__name__ = name
    return fn


def _libdevice_table() -> dict[str, Callable]:
    table: dict[str, Callable] = {"abs": _abs}
    for arity, ops in ((1, _UNARY), (2, _BINARY), (3, _TERNARY)):
        for name, op in ops.items():
            table[name] = _libdevice_fn(name, arity, op)
    for name, op in _PREDICATE.items():
        table[name] = _libdevice_fn(name, 1, op, predicate=True)
    return table


def _patch_libdevice() -> None:
    table = _libdevice_table()
    for module_name in (
        "triton.language.extra.libdevice",
        "triton.language.extra.cuda.libdevice",
        "triton.language.extra.hip.libdevice",
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name, member in inspect.getmembers(module, inspect.isfunction):
            if member.__module__ != module_name:
                continue
            replacement = table.get(name) or _unsupported(module_name, name)
            setattr(module, name, replacement)


# 3 and 4. launch: float scalars, bfloat16


def _has_bf16(arg: Any) -> bool:
    if isinstance(arg, (tuple, list)):
        return any(_has_bf16(a) for a in arg)
    base = getattr(arg, "base", None)  # TensorDescriptor
    if base is not None and not hasattr(arg, "data_ptr"):
        return _has_bf16(base)
    return str(getattr(arg, "dtype", "")) in ("torch.bfloat16", "bfloat16")


def _langs(fn: Any) -> set[str]:
    """The language modules the interpreter patches for `fn` (those its globals hold), by name."""
    import triton.language as tl

    return {v.__name__ for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)}


def _patch_launch() -> None:
    import triton.language as tl
    from triton.runtime import interpreter

    original_cvt = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            _note(f"float scalar arguments{_in_kernel()} passed as fp32 scalars, as a GPU launch would")
            with np.errstate(over="ignore"):
                data = np.array([arg], dtype=np.float32)
            return tl.tensor(interpreter.TensorHandle(data, tl.float32), tl.float32)
        return original_cvt(arg)

    original_call = interpreter.GridExecutor.__call__

    def call(self: Any, *args_dev: Any, **kwargs: Any) -> Any:
        if _has_bf16(args_dev) or _has_bf16(list(kwargs.values())):
            _notes.setdefault(BF16_NOTE, None)
        _current_kernel.append(getattr(self.fn, "__name__", "?"))
        _launch_langs.append(_langs(self.fn))
        try:
            return original_call(self, *args_dev, **kwargs)
        finally:
            _current_kernel.pop()
            _launch_langs.pop()

    original_helper = interpreter.InterpretedFunction.__call__

    def helper(self: Any, *args: Any, **kwargs: Any) -> Any:
        # The interpreter patches the language modules a helper sees (tl, tl.core) at every call of every
        # program, scanning every member of five namespaces (3 ms a call; helpers, tl.sum among them, are
        # common) and never undoing it. Inside one launch, once the launch or an earlier helper call has
        # patched them, patching again changes nothing: the call goes straight to the helper.
        langs = _langs(self.fn)
        if not (_launch_langs and langs and langs <= _launch_langs[-1]):
            try:
                return original_helper(self, *args, **kwargs)
            finally:
                if _launch_langs and langs:
                    _launch_langs[-1].update(langs)
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise interpreter.InterpreterError(repr(e)) from e

    interpreter._implicit_cvt = implicit_cvt
    interpreter.GridExecutor.__call__ = call
    interpreter.InterpretedFunction.__call__ = helper


# 5. dot shapes


def _gpu_min_dot_size(lhs_type: Any, rhs_type: Any) -> tuple[int, int, int]:
    """(M, N, K) minimums of an NVIDIA GPU for `tl.dot` (Triton's nvidia backend, 3.x)."""
    bits = lhs_type.scalar.primitive_bitwidth
    assert bits == rhs_type.scalar.primitive_bitwidth, "lhs and rhs bitwidth must be the same"
    return (1, 1, {8: 32, 64: 4, 32: 8}.get(bits, 16))


def _patch_dot_bounds() -> None:
    from triton.runtime import interpreter

    original_init = interpreter.InterpreterBuilder.__init__

    def init(self: Any) -> None:
        original_init(self)
        self.codegen_fns["min_dot_size"] = _gpu_min_dot_size

    interpreter.InterpreterBuilder.__init__ = init
    interpreter.interpreter_builder.codegen_fns["min_dot_size"] = _gpu_min_dot_size


# 6. work


def _patch_work() -> None:
    from triton.runtime.interpreter import InterpreterBuilder

    def counted(op: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = op(*args, **kwargs)
            _work["work"] += int(getattr(getattr(out, "data", None), "size", 1) or 1)
            return out

        return run

    def lanes(op: Callable[..., Any], mask_at: int) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            mask = getattr(args[mask_at], "data", None) if len(args) > mask_at else None
            if isinstance(mask, np.ndarray):
                _work["lanes"] += int(mask.size)
                _work["live_lanes"] += int(np.count_nonzero(mask))
            return op(*args, **kwargs)

        return run

    for name, op in list(vars(InterpreterBuilder).items()):
        if name.startswith("create_") and callable(op):
            setattr(InterpreterBuilder, name, counted(op))
    # (self, ptrs, mask, ...) and (self, ptrs, value, mask, ...); the unmasked forms call these with all-true
    InterpreterBuilder.create_masked_load = lanes(InterpreterBuilder.create_masked_load, 2)
    InterpreterBuilder.create_masked_store = lanes(InterpreterBuilder.create_masked_store, 3)


# 8. overflow checks


def _patch_overflow_checks() -> None:
    from triton.runtime import interpreter

    semantic = getattr(interpreter, "interpreter_semantic", None)  # Triton 3.4+: semantic is an object
    original = getattr(type(semantic), "binary_op_sanitize_overflow_impl", None)
    if semantic is None or original is None:
        return

    def check(lhs: Any, rhs: Any, binary_op: Callable[..., Any]) -> None:
        # Its only effect is a device_assert, which returns at once without debug: nothing to compute.
        if semantic.builder.options.debug:
            original(semantic, lhs, rhs, binary_op)

    semantic.binary_op_sanitize_overflow_impl = check
