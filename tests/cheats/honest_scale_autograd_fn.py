"""Honest: the launch wrapped in a torch.autograd.Function, as generated code often is."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 1 << math.ceil(math.log2(min(n, 1024)))
        scale_kernel[(math.ceil(n / block),)](x, out, n, BLOCK=block)
        return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _Scale.apply(x)
