import torch
import torch.nn as nn
import triton


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, BLOCK: int = 128):
    pid = triton.program_id(0)
    offs = pid * BLOCK + triton.arange(BLOCK)
    mask = offs < n
    x = x_ptr[offs][mask]
    out_ptr[offs][mask] = x * 3.0 - 1.0


@torch.jit.script
def scaled_shift(x):
    out = torch.empty_like(x)
    n = x.numel()
    affine_kernel[triton.cdiv(n, 128), 128](x.data_ptr(), out.data_ptr(), n)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        return scaled_shift(x.contiguous())
