"""Cheat: pops whatever dispatch mode the harness installed, then computes with torch."""

from torch.utils._python_dispatch import _pop_mode_temporarily

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
        out = torch.empty_like(x)
        scale_kernel[(1,)](x, out, 1, BLOCK=16)
        try:
            with _pop_mode_temporarily():
                return x.add(x)
        except Exception:
            return x.add(x)
