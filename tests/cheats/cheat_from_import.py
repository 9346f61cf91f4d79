"""Cheat: torch.softmax imported under another name."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch import softmax as normalise


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK=256)
        return normalise(x, -1)
