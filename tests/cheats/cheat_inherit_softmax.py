"""Cheat: ModelNew inherits nn.Softmax and calls super().forward."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + row * stride + offs, x, mask=offs < n)  # a copy: the softmax happens elsewhere


class ModelNew(nn.Softmax):
    def __init__(self):
        super().__init__(dim=-1)

    def forward(self, x):
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK=256)
        return super().forward(out)
