"""Honest: nn.Embedding only holds the positional table; a kernel reads its weight and adds it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_table_kernel(x_ptr, w_ptr, out_ptr, dim, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < dim
    x = tl.load(x_ptr + row * dim + offs, mask=mask)
    w = tl.load(w_ptr + row * dim + offs, mask=mask)
    tl.store(out_ptr + row * dim + offs, x + w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, positions, dim):
        super().__init__()
        self.pos = nn.Embedding(positions, dim)

    def forward(self, x):
        weight = self.pos.weight.contiguous()
        x = x.contiguous()
        rows, dim = x.shape
        out = torch.empty_like(x)
        add_table_kernel[(rows,)](x, weight, out, dim, BLOCK=triton.next_power_of_2(dim))
        return out
