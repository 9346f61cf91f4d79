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
    y = (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) * 2.0
    tl.store(out_ptr + offs, y, mask=mask)


def tanh2(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    tanh2_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return tanh2(x)
