"""A small kernel each CPU worker runs once before serving jobs.

Every job runs in a child forked from the worker, and whatever the interpreter loads or caches on its first
launch (language patching, the semantic layer, numpy paths, lazy imports) would otherwise be paid again in
every child: about 45 ms of CPU of a ~100 ms screening job. Paid once here, the children inherit it.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _warm_kernel(x_ptr, w_ptr, out_ptr, rows, cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    shifted = tl.where(mask, x - tl.max(x, axis=0), 0.0)
    total = tl.sum(tl.exp(shifted), axis=0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    y = tl.exp(shifted) / total * w + tl.sqrt(tl.abs(shifted) + eps)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32) + y[:, None] * y[None, :]
    y += tl.sum(acc, axis=1) * 0.0 + tl.cdiv(cols, BLOCK) * 0.0
    tl.store(out_ptr + row * stride + offs, y, mask=mask)


def warm_up() -> str | None:
    """Launch the warm-up kernel once on tiny tensors (the interpreter's shims must be installed); a failure
    is only a slower worker, said in the returned note."""
    import torch

    x = torch.randn(2, 12)
    w = torch.ones(12)
    out = torch.empty_like(x)
    try:
        _warm_kernel[(2,)](x, w, out, 2, 12, x.stride(0), 1e-5, BLOCK=16)
    except Exception as exc:  # the jobs still run, each paying the first launch itself
        return f"cpu worker warm-up failed ({type(exc).__name__}: {exc}); jobs run unwarmed"
    return None
