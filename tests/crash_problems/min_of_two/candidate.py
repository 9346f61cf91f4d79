import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    end = tl.min(start + BLOCK, n)  # NumPy's minimum meant: the second value is read as an axis
    offs = start + tl.arange(0, BLOCK)
    mask = offs < end
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        add_one_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
        return out
