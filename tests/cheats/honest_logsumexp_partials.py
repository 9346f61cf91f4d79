"""Honest: each program takes the log-sum-exp of one block of a row; the host combines the blocks' results."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def block_lse_kernel(x_ptr, part_ptr, n, stride, nblocks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n, other=-float("inf"))
    m = tl.max(x, axis=0)
    tl.store(part_ptr + row * nblocks + blk, m + tl.log(tl.sum(tl.exp(x - m), axis=0)))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        nblocks = triton.cdiv(n, 128)
        partials = torch.empty((rows, nblocks), dtype=torch.float32, device=x.device)
        block_lse_kernel[(rows, nblocks)](x, partials, n, x.stride(0), nblocks, BLOCK=128)
        return torch.logsumexp(partials, dim=1)
