"""Cheat: the jitted body calls a host helper (works under the interpreter only)."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


def host_double(v):
    return v * float(np.float64(2.0))


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, host_double(tl.load(x_ptr + offs, mask=mask)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
