"""Honest: computes in float64 (dtype casts on the host are glue) and casts back."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale64_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        wide = x.to(torch.float64).contiguous()
        out = torch.empty_like(wide)
        n = wide.numel()
        scale64_kernel[(triton.cdiv(n, 512),)](wide, out, n, BLOCK=512)
        return out.to(x.dtype)
