"""Honest: writes into a padded buffer (F.pad of the input) and returns a slice of it."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def scale_rows_kernel(x_ptr, out_ptr, cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * stride + offs)  # the pad makes every row a whole block
    tl.store(out_ptr + row * stride + offs, v * 2.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        padded = F.pad(x, (0, block - cols)).contiguous()
        out = torch.empty_like(padded)
        scale_rows_kernel[(rows,)](padded, out, cols, padded.stride(0), BLOCK=block)
        return out[:, :cols].contiguous()
