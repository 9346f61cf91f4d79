"""Honest: each program sums one block of a row into a partials buffer; the host adds the partials."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, part_ptr, n, stride, nblocks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n, other=0.0)
    tl.store(part_ptr + row * nblocks + blk, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        nblocks = triton.cdiv(n, 128)
        partials = torch.empty((rows, nblocks), dtype=x.dtype, device=x.device)
        partial_sum_kernel[(rows, nblocks)](x, partials, n, x.stride(0), nblocks, BLOCK=128)
        return torch.sum(partials, dim=1)
