import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_shift(x, scale=1.0, shift=0.0):
    # An elementwise device function over values, never launched as a kernel
    y = x.to(tl.float32) * scale
    return tl.where(y == y, y - shift, y)


class ModelNew(nn.Module):
    def forward(self, x):
        return scaled_shift(x, scale=3.0, shift=1.0)
