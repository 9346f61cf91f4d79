"""Cheat: a torch.library custom op, reached through an alias."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)

_lib = torch.library.Library("kmcheat", "DEF")
_lib.define("dbl(Tensor x) -> Tensor")
_lib.impl("dbl", lambda t: t.add(t), "CPU")
twice = torch.ops.kmcheat.dbl


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        scale_kernel[(1,)](x, out, 1, BLOCK=16)
        return twice(x)
