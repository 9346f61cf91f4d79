"""Honest: two launches over the two halves of the rows, joined with torch.cat."""

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

    def _half(self, part):
        part = part.contiguous()
        out = torch.empty_like(part)
        n = part.numel()
        scale_kernel[(triton.cdiv(n, 256),)](part, out, n, BLOCK=256)
        return out

    def forward(self, x):
        top, bottom = torch.chunk(x, 2, dim=0)
        return torch.cat([self._half(top), self._half(bottom)], dim=0)
