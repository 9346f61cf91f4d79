"""Honest: two kernels, a copy into the output and then an in-place scale of it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def scale_inplace_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.load(ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        src = x.contiguous()
        out = torch.empty_like(src)
        n = src.numel()
        grid = (triton.cdiv(n, 256),)
        copy_kernel[grid](src, out, n, BLOCK=256)
        scale_inplace_kernel[grid](out, n, BLOCK=256)
        return out
