"""Cheat: the operator in a module-level lambda, where the static reading does not look; poison catches it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

twice = lambda t: t * 2.0  # noqa: E731


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        scale_kernel[(1,)](x, out, 16, 2.0, BLOCK=16)
        return twice(x)
