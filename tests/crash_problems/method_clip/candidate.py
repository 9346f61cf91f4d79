import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    safe = offs.clip(0, n - 1)  # a NumPy method on a Triton tensor
    tl.store(out_ptr + safe, tl.load(x_ptr + safe) + 1.0, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        add_one_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
        return out
