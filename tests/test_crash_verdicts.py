"""Crash verdicts explain themselves: class, the candidate's failing line, the exception, the evidence.

The fixtures in tests/crash_problems/ are small kernels of our own, one crash class each (their folder name
says which). Light tier throughout: a crash shows on the first case.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from pathlib import Path

import pytest
from kernel_medic.tools.evaluation import crashes
from kernel_medic.tools.evaluation.evaluate import EvalReport, Evaluator
from kernel_medic.tools.evaluation.problem import load_problem
from kernel_medic.tools.repair.rules.crash_api import api_moves, moved

PROBLEMS = Path(__file__).parent / "crash_problems"

# fixture -> (verdict, class, text of the failing line the verdict must point at)
EXPECTED = {
    "api_libdevice": ("compile_error", "api_drift", "y = tl.libdevice.tanh(x) * 2.0"),
    "api_math": ("compile_error", "api_drift", "y = tl.math.tanh(x) * 2.0"),
    "import_optional": (
        "compile_error",
        "import_error",
        "def forward(self, x, scale: Optional[float] = None):",
    ),
    "import_demo": ("compile_error", "import_error", 'x = torch.randn(4, 300, device="cuda")'),
    "grid_int": ("runtime_error", "wrapper_launch_error", "tanh2_kernel[grid](x, out, n, BLOCK=BLOCK)"),
    "device_cuda": (
        "runtime_error",
        "wrapper_launch_error",
        'out = torch.empty(x.shape, device="cuda", dtype=x.dtype)',
    ),
    "autotune_conflict": (
        "runtime_error",
        "wrapper_launch_error",
        "tanh2_kernel[grid](x, out, n, BLOCK=BLOCK)",
    ),
    "block_not_pow2": ("compile_error", "constexpr_or_power_of_2", "cols = tl.arange(0, BLOCK)"),
    "missing_constexpr": ("compile_error", "constexpr_or_power_of_2", "cols = tl.arange(0, BLOCK)"),
    "output_shape": ("shape_mismatch", "output_allocation", "out = torch.empty_like(x)"),
    "interpreter_i0": (
        "compile_error",
        "interpreter_limitation",
        "y = tl.extra.cuda.libdevice.cyl_bessel_i0(x)",
    ),
    # a pointer indexed like an array; a CUDA launch config; a device function called from host code
    "pointer_index": ("compile_error", "type_mismatch", "x = x_ptr[offs]"),
    "cuda_launch": (
        "compile_error",
        "wrapper_launch_error",
        "affine_kernel[blocks, threads](x, out, n, BLOCK=128)",
    ),
    "device_fn_call": ("compile_error", "wrapper_launch_error", "y = x.to(tl.float32) * scale"),
}


def check(evaluator: Evaluator, name: str) -> EvalReport:
    return evaluator.evaluate(load_problem(PROBLEMS / name), tier="light")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_crash_gets_its_class_and_line(evaluator: Evaluator, name: str) -> None:
    verdict, klass, code = EXPECTED[name]
    report = check(evaluator, name)
    assert report.verdict == verdict, report.cases[0].error
    crash = report.crash
    assert crash is not None and crash["class"] == klass, crash
    source = (PROBLEMS / name / "candidate.py").read_text().splitlines()
    assert crash["code"] == code and source[crash["line"] - 1].strip() == code
    assert crash["evidence"] and (crash["exception"] or klass == "output_allocation")
    assert report.cases[0].crash == {k: v for k, v in crash.items() if k not in ("verdict", "case")}
    if verdict != "shape_mismatch":  # the crash leads the symptoms (and so the LLM prompt and the KB query)
        assert report.symptoms[0].startswith(f"crash ({klass}) at line {crash['line']}")


def test_output_record_names_expected_and_got(evaluator: Evaluator) -> None:
    crash = check(evaluator, "output_shape").crash
    assert crash is not None
    assert crash["expected"] == [{"shape": [6], "dtype": "float32"}]
    assert crash["got"] == [{"shape": [6, 100], "dtype": "float32"}]
    assert crash["input_shapes"] == [[6, 100]]


def test_a_passing_or_mismatching_candidate_has_no_crash(evaluator: Evaluator) -> None:
    fixed = (
        (PROBLEMS / "api_libdevice" / "candidate.py")
        .read_text()
        .replace("tl.libdevice", "tl.extra.cuda.libdevice")
    )
    problem = load_problem(PROBLEMS / "api_libdevice").with_candidate(fixed)
    report = evaluator.evaluate(problem, tier="light")
    assert report.verdict == "pass" and report.crash is None and report.cases[0].crash is None


def test_classification_of_recorded_errors() -> None:
    source = "import triton\n\n@triton.jit\ndef k(x):\n    y = x\n\ndef wrap(x):\n    k[4](x)\n"
    kernel = {
        "phase": "forward",
        "type": "InterpreterError",
        "message": "x",
        "frames": [[8, "wrap"], [5, "k"]],
    }
    tile = crashes.explain_error({**kernel, "cause": "AssertionError: tl.dot shapes must be >= 16"}, source)
    assert tile["class"] == "tile_size_constraint" and tile["line"] == 5 and tile["in_kernel"]
    types = crashes.explain_error({**kernel, "cause": "TypeError: incompatible pointer dtype"}, source)
    assert types["class"] == "type_mismatch"
    launch = crashes.explain_error(
        {
            "phase": "forward",
            "type": "TypeError",
            "message": "k() missing 1 required positional argument: 'B'",
            "frames": [[8, "wrap"]],
        },
        source,
    )
    assert launch["class"] == "wrapper_launch_error" and launch["code"] == "k[4](x)"
    other = crashes.explain_error(
        {"phase": "forward", "type": "ZeroDivisionError", "message": "division"}, source
    )
    assert other["class"] == "other" and other["line"] is None
    # A Triton CompilationError counts lines from the kernel's def.
    compiled = crashes.explain_error(
        {
            "phase": "forward",
            "type": "CompilationError",
            "message": "at 2:4:",
            "frames": [[8, "wrap"]],
            "kernel_line": 2,
            "kernel_first_line": "def k(x):",
            "cause": "ValueError: arange's range must be a power of 2",
        },
        source,
    )
    assert compiled["line"] == 5 and compiled["class"] == "constexpr_or_power_of_2"


def test_progress_orders_crashes_by_how_far_they_got() -> None:
    def report(verdict: str, **crash: object) -> dict:
        return {"verdict": verdict, "score": 0.0, "crash": crash or None}

    imported = report("compile_error", phase="import", line=3, exception="NameError", message="a")
    wrapper = report(
        "runtime_error", phase="forward", line=20, in_kernel=False, exception="TypeError", message="b"
    )
    kernel = report(
        "compile_error", phase="forward", line=9, in_kernel=True, exception="ValueError", message="c"
    )
    assert crashes.progress(imported, wrapper) and crashes.progress(wrapper, kernel)
    assert crashes.progress(kernel, report("mismatch")) and not crashes.progress(kernel, wrapper)
    same_crash = report(
        "runtime_error", phase="forward", line=25, in_kernel=False, exception="TypeError", message="b"
    )
    assert not crashes.progress(wrapper, same_crash)  # the same exception: the crash did not go away
    moved_on = report(
        "runtime_error", phase="forward", line=20, in_kernel=False, exception="KeyError", message="e"
    )
    assert crashes.progress(wrapper, moved_on)  # another exception, even on the same line
    # The same crash further down the same kernel: the site that crashed now runs (one of several alike).
    first_site = report("compile_error", phase="forward", line=9, function="k", exception="V", message="c")
    next_site = report("compile_error", phase="forward", line=14, function="k", exception="V", message="c")
    assert crashes.progress(first_site, next_site) and not crashes.progress(next_site, first_site)
    assert not crashes.progress(report("timeout"), report("mismatch"))
    # A kernel crash launched from line 30 of `wrap`, fixed: `wrap` now fails at line 34, after the launch.
    launched = report(
        "compile_error", phase="forward", line=9, function="k", in_kernel=True, exception="AttributeError",
        message="no round", launched_from=[30, "wrap"],
    )
    after = report("runtime_error", phase="forward", line=34, function="wrap", in_kernel=False,
                   exception="RuntimeError", message="bad view")
    before = report("runtime_error", phase="forward", line=28, function="wrap", in_kernel=False,
                    exception="RuntimeError", message="bad view")
    assert crashes.progress(launched, after) and not crashes.progress(launched, before)


def _resolve(dotted: str) -> object:
    """`tl.extra.cuda.libdevice.tanh` looked up in the installed Triton, attribute by attribute."""
    parts = dotted.split(".")
    assert parts[0] == "tl"
    obj: object = importlib.import_module("triton.language")
    return functools.reduce(getattr, parts[1:], obj)


def test_every_api_move_resolves_in_the_installed_triton() -> None:
    table = api_moves()
    targets = {*table["functions"].values(), *table["renames"].values(), *table["attributes"].values()}
    assert len(table["functions"]) > 150
    language = importlib.import_module("triton.language")
    for target in sorted(targets):
        found = _resolve(target)
        assert callable(found) or isinstance(found, language.dtype) or inspect.ismodule(found), target
    assert not hasattr(language, "libdevice")  # the premise of the table: 2.0's module is gone
    assert moved("tl.libdevice.tanh") == "tl.extra.cuda.libdevice.tanh"
    assert moved("tl.math.exp") == "tl.exp" and moved("tl.math.max") == "tl.maximum"
    assert moved("tl.extra.cuda.libdevice.tanh") is None and moved("torch.tanh") is None
    # tl names spelled off the top-level package, which never had them; triton's own names stay
    assert moved("triton.program_id") == "tl.program_id" and moved("triton.float32") == "tl.float32"
    assert moved("triton.math.atan2") == "tl.extra.cuda.libdevice.atan2" and moved("triton.cdiv") is None


def test_a_jit_function_called_from_host_is_a_launch_error_only_where_the_host_calls_it() -> None:
    source = (
        "import triton\n\n@triton.jit\ndef f(x):\n    return x\n\n@triton.jit\ndef k(p):\n    f(p)\n\n"
        "def wrap(x):\n    k[4](x)\n    return f(x)\n"
    )
    unsupported = {
        "phase": "forward",
        "type": "NotImplementedError",
        "message": "libdevice.j1 has no CPU-interpreter equivalent; run this kernel on a GPU",
    }
    # `return f(x)` on the host: the launch is what is missing, whatever the interpreter then said
    called = crashes.explain_error({**unsupported, "frames": [[13, "wrap"], [5, "f"]]}, source)
    assert called["class"] == "wrapper_launch_error" and called["line"] == 5
    # launched (`k[4](x)`, and k calls f): the interpreter's limit, labelled as such
    launched = crashes.explain_error({**unsupported, "frames": [[12, "wrap"], [9, "k"], [5, "f"]]}, source)
    assert launched["class"] == "interpreter_limitation"


_GPU_COMPILE = r'''
import json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernel_medic.tools.evaluation import jobs
sys.path.insert(0, sys.argv[1])
import kernel
source = ASTSource(fn=kernel.double, signature={"x_ptr": "*fp32", "N": "constexpr"}, constexprs={"N": 509})
try:
    triton.compile(source, target=GPUTarget("cuda", 90, 32))
except Exception as exc:
    described = jobs._describe(jobs.PhaseError("forward", exc))
    keep = ("phase", "type", "message", "from_triton", "cause", "detail")
    print(json.dumps({k: described[k] for k in keep}))
'''


def test_a_gpu_compile_error_says_why_so_a_shape_outside_the_domain_is_not_judged(tmp_path: Path) -> None:
    """A GPU backend raises a CompilationError whose first line is only its place ("at 4:11:"). On an H200 a
    correct kernel for power-of-2 rows was rejected: its derived 509-wide shape read as a compile error
    instead of a shape outside the kernel's domain. Triton's own front end raises the same error here."""
    import json
    import os
    import subprocess
    import sys

    from kernel_medic.tools.evaluation.evaluate import _STATIC_CONSTRAINT

    kernel = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef double(x_ptr, N: tl.constexpr):\n"
        "    offs = tl.arange(0, N)\n    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)\n"
    )
    (tmp_path / "kernel.py").write_text(kernel)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # a compile, not the interpreter
    proc = subprocess.run(
        [sys.executable, "-c", _GPU_COMPILE, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-2000:]
    err = json.loads(proc.stdout.strip().splitlines()[-1])
    assert err["type"] == "CompilationError" and err["from_triton"]
    assert "power of 2" in err["message"]
    assert _STATIC_CONSTRAINT.search(f"{err['phase']}: {err['type']}: {err['message']}")
    assert crashes.explain_error(err, kernel)["class"] == "constexpr_or_power_of_2"
