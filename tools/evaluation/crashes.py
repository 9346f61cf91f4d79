"""Crash verdicts that explain themselves: the failing line of the candidate, the exception and a class.

A `compile_error`, `runtime_error`, `shape_mismatch` or `dtype_mismatch` case carries a `crash` record:

    {"class": ..., "line": N | None, "code": "the line's text", "exception": "TypeError",
     "message": "...", "phase": "import|init|forward|output", "evidence": "a short sentence"}

The line comes from the frames the sandboxed job saw in the candidate's own file (`jobs._crash_site`, over
the whole chain of causes, since the Triton interpreter re-raises a kernel's error from its own frames), or
from a Triton CompilationError's kernel-relative line. Classes, checked in this order:

- `interpreter_limitation`: the CPU interpreter (or our shims for it) cannot run a construct; not the
  kernel's fault, labelled and never repaired;
- `api_drift`: a Triton name that moved or vanished between releases (`tl.libdevice`, `tl.math.tanh`...);
- `import_error`: the module fails while being imported (a missing import, demo code at module level);
- `constexpr_or_power_of_2`: a non-power-of-2 `tl.arange`, a shape argument that is not `tl.constexpr`;
- `tile_size_constraint`: `tl.dot` tiles below 16, block shapes the backend refuses;
- `wrapper_launch_error`: the host wrapper fails (grid not a tuple, wrong argument count, `.cuda()`, a
  jit function called from host code instead of launched...);
- `type_mismatch`: incompatible dtypes or pointer types (a pointer indexed like an array);
- `output_allocation`: the output has the wrong shape or dtype (the reference's are in `expected`);
- `other`.

Pure functions of the job's error record, the candidate source and (for outputs) the shapes: the judge's
verdict never depends on the class, only the explanation does.
"""

from __future__ import annotations

import ast
import re
from typing import Any

CRASH_VERDICTS = ("compile_error", "runtime_error", "shape_mismatch", "dtype_mismatch")
CRASH_CLASSES = (
    "interpreter_limitation",
    "api_drift",
    "import_error",
    "constexpr_or_power_of_2",
    "tile_size_constraint",
    "wrapper_launch_error",
    "type_mismatch",
    "output_allocation",
    "other",
)

_INTERPRETER = re.compile(
    r"interpret(?:er|ed)? mode|not supported (?:in|by) the interpreter|interpreter does not|"
    r"has no numpy equivalent|cannot run in the interpreter|unsupported in interpreter",
    re.I,
)
_API_DRIFT = re.compile(
    r"module '(?:triton|tl)[\w.]*' has no attribute|cannot import name '\w+' from '?triton|"
    r"no module named '?triton\.|triton\.\S+ has no attribute|"
    r"unexpected keyword argument '(?:allow_tf32|out_dtype_fp32|warmup|rep)'",
    re.I,
)
_POW2 = re.compile(
    r"power of (?:2|two)|power-of-(?:2|two)|must be (?:of type )?(?:a )?tl\.constexpr|must be a constexpr|"
    r"constexpr|must be a constant|shape element \d+ must|is not a constant",
    re.I,
)
_TILE = re.compile(
    r">= ?16|at least 16|must be >= \d+|minimum (?:tile|block)|tl\.dot.*shape|dot.*(?:M|N|K) ?>=|"
    r"shapes should have M >=|"
    r"out of resource|shared memory",
    re.I,
)
_LAUNCH = re.compile(
    r"has no len\(\)|not subscriptable|is not iterable|grid|missing \d+ required (?:positional )?argument|"
    r"got multiple values for|unexpected keyword argument|takes \d+ positional arguments? but \d+|"
    r"conflicting meta-parameters|re-define auto-tuned|not compiled with cuda|no nvidia driver|"
    r"cuda|device|torch\.cuda|expected all tensors to be on the same",
    re.I,
)
_TYPES = re.compile(
    r"dtype|incompatible|mismatched types|type mismatch|cannot (?:be )?cast|unsupported (?:operand )?type|"
    r"pointer|expected .*type|bitwidth|fp8|bf16|int64|float64|IncompatibleTypeError",
    re.I,
)
# Interpreted, a jit function called from host code runs as Python until its first `tl.` call.
_HOST_CALLED = re.compile(r"forget to add @triton\.jit|_semantic` argument must be provided", re.I)
_INDEXED = re.compile(r"object is not (?:iterable|subscriptable)|does not support item assignment", re.I)
_LAUNCH_LINE = re.compile(r"\w\s*\[[^\]]*\]\s*\(")  # `kernel[grid](...)`
# Where the crash happened, earliest first: progress is a crash that moved further along (see `stage`).
_PHASE_STAGE = {"import": 0, "init": 1, "inputs": 1, "forward": 2, "output": 4}


def explain_error(err: dict[str, Any], source: str, kernels: set[str] | None = None) -> dict[str, Any]:
    """The crash record of a job's error (`jobs._describe`): class, candidate line, exception, evidence."""
    phase = str(err.get("phase") or "forward")
    exc_type = str(err.get("type") or "Exception")
    message = str(err.get("message") or "")
    cause = str(err.get("cause") or f"{exc_type}: {message}")
    detail = str(err.get("detail") or message)
    inner_type, _, inner_msg = cause.partition(": ")
    lines = source.splitlines()
    kernels = kernel_names(source) if kernels is None else kernels
    frames = [(int(f[0]), str(f[1])) for f in err.get("frames") or [] if isinstance(f, list | tuple)]
    line, function = frames[-1] if frames else (None, "")
    if err.get("kernel_line") and err.get("kernel_first_line"):
        absolute = _kernel_absolute_line(lines, str(err["kernel_first_line"]), int(err["kernel_line"]))
        if absolute is not None:
            line, function = absolute, function or "kernel"
    code = lines[line - 1].strip() if line and 0 < line <= len(lines) else ""
    text = f"{inner_type}: {inner_msg} {detail}"
    in_kernel = function in kernels
    raised_in = str(err.get("raised_in") or "")
    # A jit function the host calls by name (`f(x)`, not a launch `f[grid](x)`), from the frame below it.
    caller = frames[-2] if len(frames) > 1 else None
    caller_code = lines[caller[0] - 1] if caller and 0 < caller[0] <= len(lines) else ""
    host_called = (
        in_kernel
        and caller is not None
        and caller[1] not in kernels
        and re.search(rf"(?<![\w.]){re.escape(function)}\s*\(", caller_code) is not None
    )
    klass = _classify(phase, inner_type or exc_type, text, code, in_kernel, raised_in, host_called)
    where = f"line {line} `{code[:80]}`" if line else "no line of the candidate in the traceback"
    record = {
        "class": klass,
        "line": line,
        "code": code[:200],
        "exception": inner_type or exc_type,
        "message": (inner_msg or message)[:300],
        "phase": phase,
        "function": function,
        "in_kernel": in_kernel,
        "evidence": f"{inner_type or exc_type} in {phase} at {where}: {_why(klass, text)}"[:300],
    }
    if in_kernel and caller is not None and caller[1] not in kernels:
        record["launched_from"] = [caller[0], caller[1]]  # the host line that launched the failing kernel
    if phase == "import":
        # The top-level statement that was running: demo code at module level is removed there.
        module_lines = [ln for ln, fn in frames if fn == "<module>"]
        record["module_line"] = module_lines[0] if module_lines else line
    return record


def _classify(
    phase: str,
    exc_type: str,
    text: str,
    code: str,
    in_kernel: bool,
    raised_in: str,
    host_called: bool = False,
) -> str:
    if in_kernel and (host_called or _HOST_CALLED.search(text)):
        # A @triton.jit function called from host code, never launched: whatever it then raised (the
        # interpreter runs it as Python on whole tensors), the launch is what is missing, on any backend.
        return "wrapper_launch_error"
    interp_file = "interpreter" in raised_in.rsplit("/", 1)[-1]
    if exc_type == "NotImplementedError" and (interp_file or "interpreter" in text.lower()):
        return "interpreter_limitation"
    if _INTERPRETER.search(text):
        return "interpreter_limitation"
    if _API_DRIFT.search(text) or re.search(r"\btl\.libdevice\.|triton\.language\.libdevice", code):
        return "api_drift"
    if phase == "import":
        return "import_error"
    if exc_type == "NameError":
        return "import_error"  # a name never imported or defined: the same fix as at import time
    if not in_kernel and re.search(r"\bcuda\b|is_cuda|data_ptr\(", code):
        return "wrapper_launch_error"  # e.g. a bare `assert x.is_cuda` (no message to go by)
    if in_kernel and _INDEXED.search(text) and "[" in code:
        return "type_mismatch"  # a pointer indexed like an array: Triton loads and stores through calls
    if _POW2.search(text):
        return "constexpr_or_power_of_2"
    if in_kernel and _TILE.search(text):
        return "tile_size_constraint"
    if not in_kernel and (_LAUNCH.search(text) or _LAUNCH_LINE.search(code)):
        return "wrapper_launch_error"
    if _TYPES.search(text):
        return "type_mismatch"
    if _LAUNCH.search(text):
        return "wrapper_launch_error"
    return "other"


def _why(klass: str, text: str) -> str:
    text = " ".join(text.split())
    return {
        "interpreter_limitation": "the CPU interpreter cannot run this construct (not repaired)",
        "api_drift": "a Triton name that moved or was removed between releases",
        "import_error": "the module fails while it is imported or names something never imported",
        "constexpr_or_power_of_2": "a block size that is not a power of 2 or not a tl.constexpr",
        "tile_size_constraint": "a tile smaller or larger than the backend allows",
        "wrapper_launch_error": "the host wrapper or the kernel launch is malformed",
        "type_mismatch": "incompatible dtypes or pointer types",
    }.get(klass, text[:120])


def _kernel_absolute_line(lines: list[str], first_line: str, relative: int) -> int | None:
    """A CompilationError's line counts from the kernel's `def`: find that def in the source."""
    first = first_line.strip()
    for i, text in enumerate(lines):
        if text.strip() == first:
            return i + relative
    return None


def kernel_names(source: str) -> set[str]:
    """Names of the functions decorated with a `jit` (triton.jit, jit, triton.jit(...))."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name in ("jit", "autotune", "heuristics"):
                    out.add(node.name)
    return out


def explain_output(
    verdict: str,
    source: str,
    got: list[tuple[list[int], str]],
    expected: list[tuple[list[int], str]],
    input_shapes: list[list[int] | None],
) -> dict[str, Any]:
    """The crash record of an output with the wrong shape or dtype (or count): class output_allocation.

    The line is where ModelNew.forward allocates what it returns (else its return statement).
    """
    line = _output_line(source)
    lines = source.splitlines()
    code = lines[line - 1].strip() if line and 0 < line <= len(lines) else ""
    if len(got) != len(expected):
        what = f"the candidate returns {len(got)} outputs, the reference {len(expected)}"
    else:
        diffs = [
            f"output {i}: shape {list(g[0])} {g[1]}, expected shape {list(e[0])} {e[1]}"
            for i, (g, e) in enumerate(zip(got, expected))
            if list(g[0]) != list(e[0]) or g[1] != e[1]
        ]
        what = "; ".join(diffs) or "outputs differ in shape or dtype"
    return {
        "class": "output_allocation",
        "line": line,
        "code": code[:200],
        "exception": "",
        "message": what[:300],
        "phase": "output",
        "function": "forward",
        "in_kernel": False,
        "evidence": f"{verdict}: {what}"[:300],
        "expected": [{"shape": list(s), "dtype": d} for s, d in expected],
        "got": [{"shape": list(s), "dtype": d} for s, d in got],
        "input_shapes": input_shapes,
    }


def _output_line(source: str) -> int | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == "ModelNew"):
            continue
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
                if not returns:
                    return None
                ret = returns[-1]
                names = {n.id for n in ast.walk(ret.value) if isinstance(n, ast.Name)} if ret.value else set()
                allocs = [
                    n.lineno
                    for n in ast.walk(fn)
                    if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id in names for t in n.targets)
                ]
                return allocs[0] if allocs else ret.lineno
    return None


def stage(report: dict[str, Any]) -> int:
    """How far the candidate got, 0 (import) .. 6 (pass): a crash that moved on is progress (`progress`)."""
    verdict = report.get("verdict")
    if verdict == "pass":
        return 6
    if verdict == "mismatch":
        return 5
    crash = report.get("crash") or {}
    if verdict in ("shape_mismatch", "dtype_mismatch"):
        return 4
    if verdict in ("compile_error", "runtime_error"):
        base = _PHASE_STAGE.get(str(crash.get("phase")), 2)
        # In forward: a kernel that was launched got further than a wrapper that failed before launching.
        return base + (1 if base == 2 and crash.get("in_kernel") else 0)
    return -1  # timeout, crash (signal), invalid: no ordering


def progress(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether `new` (a report of a patched source) got further than `old` without scoring higher.

    Scores stay the judge's (a crash scores 0); this only orders equal scores: a later stage, or at the same
    crash stage a different exception or message (the old crash is gone, another one showed up).
    """
    a, b = stage(old), stage(new)
    if a < 0 or b < 0:
        return False
    if _past_launch(old.get("crash") or {}, new.get("crash") or {}):
        return True
    if b != a:
        return b > a
    if new.get("verdict") not in ("compile_error", "runtime_error"):
        return False
    old_c, new_c = old.get("crash") or {}, new.get("crash") or {}
    if not old_c or not new_c:
        return False
    # A different exception, at the same line or another: the old crash is gone (constexpr fixed, and now the
    # same arange says its range is not a power of 2). The same exception elsewhere is not progress, unless
    # it is further down the same function: the site that crashed ran, and the next one like it is reached.
    before = (old_c.get("exception"), old_c.get("message"))
    if before != (new_c.get("exception"), new_c.get("message")):
        return True
    same_place = bool(old_c.get("function")) and (old_c.get("phase"), old_c.get("function")) == (
        new_c.get("phase"),
        new_c.get("function"),
    )
    lines = old_c.get("line"), new_c.get("line")
    return same_place and all(isinstance(n, int) for n in lines) and lines[1] > lines[0]


def _past_launch(old_c: dict[str, Any], new_c: dict[str, Any]) -> bool:
    """The kernel that crashed now runs, and its wrapper fails further down (`view` of its output): a host
    crash after the launch is further along than the kernel crash, though a kernel crash usually ranks above a
    host one."""
    launched = old_c.get("launched_from")
    if not (old_c.get("in_kernel") and isinstance(launched, list | tuple) and len(launched) == 2):
        return False
    line = new_c.get("line")
    return (
        not new_c.get("in_kernel")
        and new_c.get("phase") == old_c.get("phase")
        and new_c.get("function") == launched[1]
        and isinstance(line, int)
        and line > int(launched[0])
    )


def summary(cases: list[Any]) -> dict[str, Any] | None:
    """The report-level crash record: the worst counted case's (CaseResult or its dict)."""
    order = {v: i for i, v in enumerate(CRASH_VERDICTS)}
    best: tuple[int, dict[str, Any]] | None = None
    for case in cases:
        get = case.get if isinstance(case, dict) else lambda k, c=case: getattr(c, k, None)
        crash, verdict, counted = get("crash"), get("verdict"), get("counted")
        if not crash or counted is False or verdict not in order:
            continue
        if best is None or order[verdict] < best[0]:
            best = (order[verdict], {**crash, "verdict": verdict, "case": get("name")})
    return best[1] if best else None
