import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_shift(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 3.0 - 1.0, mask=mask)


def scaled_shift_wrapper(x):
    out = torch.empty_like(x)
    n = x.numel()
    scaled_shift[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        # calls the kernel itself instead of the host function that launches it
        return scaled_shift(x.contiguous())
