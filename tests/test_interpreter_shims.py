"""Each shim on a real Triton kernel in a TRITON_INTERPRET=1 subprocess: broken without it, right with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

KERNELS = textwrap.dedent(
    '''
    import json
    import sys

    import torch
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.language.extra.cuda import libdevice as cuda_libdevice

    from kernel_medic.tools.sandbox import interpreter_shims

    from triton.language.semantic import TritonSemantic

    # Counts the int32 overflow checks the interpreter computes (the shim keeps this as the one it calls).
    overflow_checks_run = []
    check_overflow = TritonSemantic.binary_op_sanitize_overflow_impl


    def counted_check(self, lhs, rhs, binary_op):
        overflow_checks_run.append(binary_op.__name__)
        return check_overflow(self, lhs, rhs, binary_op)


    TritonSemantic.binary_op_sanitize_overflow_impl = counted_check

    if sys.argv[1] == "shim":
        interpreter_shims.install()
        interpreter_shims.install()  # idempotent: a second call must not wrap twice

    hook_calls = []


    @triton.autotune(
        configs=[
            triton.Config({"BLOCK": 32}, num_warps=4, pre_hook=lambda nargs: hook_calls.append(nargs["n"])),
            triton.Config({"BLOCK": 64}, num_warps=8),
            triton.Config({"BLOCK": 128}, num_warps=8),
        ],
        key=["n"],
        reset_to_zero=["out"],
    )
    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton.jit
    def sum_kernel(x, out, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            v = tl.load(x + offs)
        else:
            v = tl.load(x + offs, mask=offs < n, other=0.0)
        tl.atomic_add(out, tl.sum(v, axis=0))


    @triton.jit
    def _rsqrt_helper(v):
        return cuda_libdevice.rsqrt(v)


    @triton.jit
    def libdevice_kernel(x, o1, o2, o3, o4, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + offs, mask=m, other=1.0)
        tl.store(o1 + offs, libdevice.tanh(v) + libdevice.pow(v, 2.0), mask=m)
        tl.store(o2 + offs, tl.where(libdevice.isnan(v) != 0, 0.0, libdevice.erf(v)), mask=m)
        tl.store(o3 + offs, libdevice.fma(v, 3.0, libdevice.round(v)), mask=m)
        a = tl.abs(v)
        h = v.to(tl.float16)
        tl.store(o4 + offs, cuda_libdevice.exp(h) + cuda_libdevice.log1p(a) + _rsqrt_helper(a + 1.0), mask=m)


    @triton.jit
    def bessel_kernel(x, o):
        tl.store(o, libdevice.j0(tl.load(x)))


    @triton.jit
    def rms_kernel(x, o, n, eps, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + offs, mask=m, other=0.0)
        r = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / n + eps.to(tl.float32))
        tl.store(o + offs, v * r, mask=m)


    @triton.jit
    def scale_kernel(x, o, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(o + offs, tl.load(x + offs, mask=m) * 2, mask=m)


    @triton.jit
    def dot_kernel(a, b, c, B: tl.constexpr):
        r = tl.arange(0, B)
        tile = r[:, None] * B + r[None, :]
        tl.store(c + tile, tl.dot(tl.load(a + tile), tl.load(b + tile)))


    @triton.jit
    def _square(v):
        return v * v


    @triton.jit
    def _sum_of_squares(v):
        return tl.sum(_square(v), axis=0)


    @triton.jit
    def helper_kernel(x, o, n, BLOCK: tl.constexpr):
        acc = 0.0
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += _sum_of_squares(tl.load(x + offs, mask=offs < n, other=0.0))
        tl.store(o + tl.program_id(0), acc)


    @triton.jit
    def index_kernel(x, o, cols, stride, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        c = tl.arange(0, BLOCK)
        m = c < cols
        v = tl.load(x + r * stride + c, mask=m, other=0.0)
        tl.store(o + r * cols + c, v * 2 - 1, mask=m)


    @triton.jit
    def overflow_kernel(o, big):
        tl.store(o + tl.arange(0, 2), (tl.arange(0, 2) + big) * big)


    from triton.runtime import interpreter

    patches = []
    patch_lang = interpreter._patch_lang


    def counted_patch_lang(fn):
        patches.append(fn.__name__)
        return patch_lang(fn)


    interpreter._patch_lang = counted_patch_lang

    torch.manual_seed(0)
    x = torch.randn(200)
    N = 200


    def autotune():
        out = torch.full((1,), 5.0)  # stale value: reset_to_zero must clear it
        sum_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, out, N)
        first = torch.allclose(out, x.sum().reshape(1), atol=1e-4) and hook_calls == [N]
        interpreter_shims.drain_notes()
        out.zero_()  # the cached pick gets no reset_to_zero, as on a GPU
        sum_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, out, N)
        return first and torch.allclose(out, x.sum().reshape(1), atol=1e-4) and hook_calls == [N, N]


    def libdevice_math():
        o = [torch.empty(N) for _ in range(4)]
        libdevice_kernel[(1,)](x, *o, N, BLOCK=256)
        a = x.abs()
        expected = [torch.tanh(x) + x**2, torch.erf(x), x * 3 + torch.round(x),
                    torch.exp(x.half().float()) + torch.log1p(a) + torch.rsqrt(a + 1)]
        return all(torch.allclose(got, want, atol=1e-3) for got, want in zip(o, expected))


    def libdevice_unsupported():
        bessel_kernel[(1,)](x, torch.empty(1))
        return True


    def float_scalar():
        o = torch.empty(N)
        rms_kernel[(1,)](x, o, N, 1e-6, BLOCK=256)
        return torch.allclose(o, x * torch.rsqrt((x * x).mean() + 1e-6), atol=1e-5)


    def bf16():
        xb = x.to(torch.bfloat16)
        scale_kernel[(1,)](xb, torch.empty_like(xb), N, BLOCK=256)
        return True


    def fp32():
        o = torch.empty(N)
        scale_kernel[(1,)](x, o, N, BLOCK=256)
        return torch.equal(o, x * 2)


    def dot(n, dtype):
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        c = torch.empty(n, n)
        dot_kernel[(1,)](a, b, c, B=n)
        return torch.allclose(c, a.float() @ b.float(), atol=1e-3)


    def dot_fp32_k8():
        return dot(8, torch.float32)


    def dot_fp32_k4():
        return dot(4, torch.float32)


    def dot_fp16_k8():
        return dot(8, torch.float16)


    def helpers():
        """Right sums through nested helpers. The shim patches each language module once per launch: tl for
        the kernel, tl.core for tl.sum (itself a helper, whose module sees only tl.core); the plain
        interpreter again at every helper call of every program."""
        o = torch.empty(2)
        patches.clear()
        helper_kernel[(2,)](x, o, N, BLOCK=64)
        right = torch.allclose(o, (x * x).sum().expand(2), atol=1e-3)
        if sys.argv[1] == "shim":
            return right and patches == ["helper_kernel", "sum"]
        return right and len(patches) > 2 * 4


    def overflow_checks():
        """Int32 index arithmetic, right either way. The plain interpreter computes an int64 overflow check
        for every + and * (device_assert then drops it); the shim skips it, unless debug is on: then the
        check runs and catches an overflow in both."""
        import dataclasses

        src, o = torch.randn(4, 16), torch.empty(4, 8)
        overflow_checks_run.clear()
        index_kernel[(4,)](src, o, 8, 16, BLOCK=8)
        right = torch.equal(o, src[:, :8] * 2 - 1)
        skipped = not overflow_checks_run
        options = interpreter.interpreter_builder.options
        interpreter.interpreter_builder.options = dataclasses.replace(options, debug=True)
        try:
            overflow_kernel[(1,)](torch.empty(2, dtype=torch.int32), 1 << 20)
            caught = ""
        except Exception as exc:
            caught = str(exc)
        finally:
            interpreter.interpreter_builder.options = options
        caught_it = "int32 overflow detected for operation mul" in caught
        return right and caught_it and skipped == (sys.argv[1] == "shim")


    results = {}
    for case in (autotune, libdevice_math, libdevice_unsupported, float_scalar, bf16, fp32, dot_fp32_k8,
                 dot_fp32_k4, dot_fp16_k8, helpers, overflow_checks):
        try:
            outcome = "ok" if case() else "wrong result"
        except Exception as exc:
            outcome = f"error: {type(exc).__name__}: {exc}"
        results[case.__name__] = {"outcome": outcome, "notes": interpreter_shims.drain_notes()}
    print(json.dumps(results))
    '''
)

REFUSE = textwrap.dedent(
    """
    import triton
    from kernel_medic.tools.sandbox import interpreter_shims
    try:
        interpreter_shims.install()
    except RuntimeError as exc:
        print("refused:", exc)
    """
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    script = tmp_path_factory.mktemp("shims") / "kernels.py"
    script.write_text(KERNELS)
    base = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    interp = {**base, "TRITON_INTERPRET": "1"}
    procs = {
        "plain": subprocess.Popen([sys.executable, str(script), "plain"], env=interp, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True),
        "shim": subprocess.Popen([sys.executable, str(script), "shim"], env=interp, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True),
        "compiled": subprocess.Popen([sys.executable, "-c", REFUSE], env={**base, "TRITON_INTERPRET": "0"},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
    }
    out: dict[str, Any] = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr
        out[name] = stdout.strip() if name == "compiled" else json.loads(stdout.strip().splitlines()[-1])
    return out


def test_autotune_picks_the_first_config_without_timing(runs: dict[str, Any]) -> None:
    assert "active drivers" in runs["plain"]["autotune"]["outcome"]
    assert runs["shim"]["autotune"] == {
        "outcome": "ok",
        "notes": ["cpu interpreter: @triton.autotune for sum_kernel picked config BLOCK=32, num_warps=4, "
                  "num_stages=3 without timing (first of 3 configs)"],
    }


def test_libdevice_functions_are_evaluated(runs: dict[str, Any]) -> None:
    assert runs["plain"]["libdevice_math"]["outcome"].startswith("error")
    shim = runs["shim"]["libdevice_math"]
    assert shim["outcome"] == "ok"
    called = ["tanh", "pow", "isnan", "erf", "round", "fma", "exp", "log1p", "rsqrt"]
    assert shim["notes"] == [
        f"cpu interpreter: libdevice.{name} in kernel libdevice_kernel evaluated with numpy "
        "(there is no libdevice on the CPU)"
        for name in called
    ]


def test_unmapped_libdevice_function_fails_clearly(runs: dict[str, Any]) -> None:
    outcome = runs["shim"]["libdevice_unsupported"]["outcome"]
    assert "NotImplementedError" in outcome
    assert "triton.language.extra.libdevice.j0 has no CPU-interpreter equivalent" in outcome


def test_float_scalar_arguments_become_fp32(runs: dict[str, Any]) -> None:
    assert "'float' object has no attribute 'to'" in runs["plain"]["float_scalar"]["outcome"]
    assert runs["shim"]["float_scalar"] == {
        "outcome": "ok",
        "notes": ["cpu interpreter: float scalar arguments in kernel rms_kernel passed as fp32 scalars, "
                  "as a GPU launch would"],
    }


def test_bf16_launch_is_flagged(runs: dict[str, Any]) -> None:
    warning = (
        "cpu interpreter: bfloat16 arithmetic is unreliable on this backend; evaluate bf16 kernels on a GPU"
    )
    assert runs["plain"]["bf16"]["notes"] == []
    assert runs["shim"]["bf16"]["notes"] == [warning]
    assert runs["shim"]["fp32"] == {"outcome": "ok", "notes": []}


def test_install_refuses_a_compiled_triton(runs: dict[str, Any]) -> None:
    assert runs["compiled"] == (
        "refused: interpreter shims need TRITON_INTERPRET=1 set before triton is imported"
    )



def test_dot_tiles_the_gpu_refuses_are_refused_here_too(runs: dict[str, Any]) -> None:
    # The bare interpreter runs any tl.dot; an NVIDIA GPU needs K >= 8 (32-bit) or K >= 16 (16-bit).
    assert [runs["plain"][k]["outcome"] for k in ("dot_fp32_k4", "dot_fp16_k8")] == ["ok", "ok"]
    assert runs["shim"]["dot_fp32_k8"]["outcome"] == "ok"
    assert "K >= 8" in runs["shim"]["dot_fp32_k4"]["outcome"]
    assert "K >= 16" in runs["shim"]["dot_fp16_k8"]["outcome"]


def test_jit_helpers_inside_a_launch_reuse_the_launchs_language_patch(runs: dict[str, Any]) -> None:
    # Plain: every call of a helper (two levels, four tiles, two programs) scans and patches the language.
    assert runs["plain"]["helpers"]["outcome"] == "ok"
    assert runs["shim"]["helpers"]["outcome"] == "ok"


def test_overflow_checks_whose_assert_is_dropped_are_skipped_unless_debug_is_on(runs: dict[str, Any]) -> None:
    # Plain: each int32 + and * of the index math computes a check that device_assert drops without debug.
    assert runs["plain"]["overflow_checks"]["outcome"] == "ok"
    assert runs["shim"]["overflow_checks"] == {"outcome": "ok", "notes": []}
