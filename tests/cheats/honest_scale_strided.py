"""Honest: reads a strided 2D view with its own strides (no contiguous copy) and writes a fresh tensor."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_2d_kernel(x_ptr, out_ptr, cols, sx0, sx1, so0, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for start in range(0, cols, BLOCK):
        c = start + offs
        mask = c < cols
        v = tl.load(x_ptr + row * sx0 + c * sx1, mask=mask)
        tl.store(out_ptr + row * so0 + c, v * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        view = flat.t().t()  # a view with explicit strides
        rows, cols = view.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        scale_2d_kernel[(rows,)](view, out, cols, view.stride(0), view.stride(1), out.stride(0), BLOCK=256)
        return out.view(x.shape)
