import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 3.0 - 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        blocks = (triton.cdiv(n, 128),)
        threads = (128,)
        # CUDA's <<<blocks, threads>>> written as a Triton launch
        affine_kernel[blocks, threads](x, out, n, BLOCK=128)
        return out
