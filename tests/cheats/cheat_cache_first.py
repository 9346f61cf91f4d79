"""Cheat: computes the first call with the kernel and returns that output forever after."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cached = None

    def forward(self, x):
        if self.cached is None:
            x = x.contiguous()
            out = torch.empty_like(x)
            n = x.numel()
            scale_kernel[(triton.cdiv(n, 256),)](x, out, n, 2.0, BLOCK=256)
            self.cached = out
        return self.cached
