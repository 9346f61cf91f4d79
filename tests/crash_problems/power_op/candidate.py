import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh2_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x ** 2 * 2.0 + tl.where(x >= 0, x ** 0.5, 0.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 128
        grid = (triton.cdiv(n, BLOCK),)
        tanh2_kernel[grid](x, out, n, BLOCK=BLOCK)
        return out
