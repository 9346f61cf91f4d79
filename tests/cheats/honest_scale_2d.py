"""Honest: a 2D grid over rows and column blocks, reading through the input's strides (no copy)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_2d_kernel(x_ptr, out_ptr, n_cols, sx_row, sx_col, so_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sx_row + cols * sx_col, mask=mask)
    tl.store(out_ptr + row * so_row + cols, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        block = min(triton.next_power_of_2(n_cols), 256)
        grid = (n_rows, triton.cdiv(n_cols, block))
        scale_2d_kernel[grid](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0), BLOCK=block)
        return out
