Here is an optimized Triton implementation of the operator.
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
    # tanh through exp: 1 - 2 / (exp(2x) + 1)
    y = (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) * 2.0
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 128
        tanh2_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out

Explanation: each program handles BLOCK elements; the mask keeps the tail in bounds.
The kernel computes tanh with one exp, which is cheaper than calling libdevice.
