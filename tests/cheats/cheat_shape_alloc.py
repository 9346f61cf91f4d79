"""Cheat: a tensor allocated from x.shape is treated as a size by a naive scan; compute on it slips by."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        scale_kernel[(1,)](x, y, 1, BLOCK=16)
        y.copy_(x)
        return y.mul_(2.0)
