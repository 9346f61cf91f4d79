"""Cheat: a Python loop reads each element and computes with math; a kernel runs for show."""

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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        flat = x.reshape(-1)
        out = torch.empty_like(flat)
        scale_kernel[(1,)](flat, out, 1, BLOCK=16)
        for i in range(flat.numel()):
            out[i] = math.ldexp(float(flat[i]), 1)
        return out.view(x.shape)
