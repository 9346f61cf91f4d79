"""Honest: computes in float32 whatever the input dtype, casting in and out as glue."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_f32_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        dtype = x.dtype
        x32 = x.to(torch.float32).contiguous()
        out = torch.empty(x32.shape, dtype=torch.float32, device=x.device)
        n = x32.numel()
        scale_f32_kernel[(triton.cdiv(n, 256),)](x32, out, n, BLOCK=256)
        if dtype != torch.float32:
            out = out.to(dtype)
        return out
