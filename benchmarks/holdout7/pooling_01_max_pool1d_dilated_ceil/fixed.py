"""Triton kernel for ``F.max_pool1d`` (padding, dilation, ceil_mode) on (N, C, L) inputs.

Each program handles BLOCK_R (n, c) rows and a whole row of outputs as a 2-D tile, and walks the
KSIZE taps of the dilated window; padded positions never win the max (they load as -inf).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_pool1d_kernel(
    x_ptr, y_ptr,
    R, C, L, L_OUT,
    stride_xn, stride_xc, stride_xl,
    stride_yn, stride_yc, stride_yl,
    KSIZE: tl.constexpr,
    STRIDE: tl.constexpr,
    PAD: tl.constexpr,
    DIL: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_O: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)     # flattened (n, c)
    outs = tl.arange(0, BLOCK_O)                     # output positions
    row_mask = rows < R
    out_mask = outs < L_OUT

    n = rows // C
    c = rows % C
    x_row = x_ptr + n * stride_xn + c * stride_xc

    win_start = outs * STRIDE - PAD
    best = tl.full([BLOCK_R, BLOCK_O], float("-inf"), dtype=tl.float32)
    for k in tl.static_range(KSIZE):
        pos = win_start + k * DIL
        valid = row_mask[:, None] & out_mask[None, :] & ((pos >= 0) & (pos < L))[None, :]
        v = tl.load(x_row[:, None] + pos[None, :] * stride_xl, mask=valid, other=float("-inf"))
        best = tl.maximum(best, v.to(tl.float32))

    y_ptrs = y_ptr + (n * stride_yn + c * stride_yc)[:, None] + outs[None, :] * stride_yl
    tl.store(y_ptrs, best.to(y_ptr.dtype.element_ty), mask=row_mask[:, None] & out_mask[None, :])


def _pool_out_len(L, kernel_size, stride, padding, dilation, ceil_mode=False):
    return (L + 2 * padding - dilation * (kernel_size - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1


def max_pool1d_triton(x, kernel_size, stride, padding, dilation, ceil_mode):
    N, C, L = x.shape
    L_out = _pool_out_len(L, kernel_size, stride, padding, dilation, ceil_mode)
    y = torch.empty((N, C, L_out), device=x.device, dtype=x.dtype)

    R = N * C
    BLOCK_R = 8
    BLOCK_O = triton.next_power_of_2(L_out)
    grid = (triton.cdiv(R, BLOCK_R),)
    max_pool1d_kernel[grid](
        x, y,
        R, C, L, L_out,
        x.stride(0), x.stride(1), x.stride(2),
        y.stride(0), y.stride(1), y.stride(2),
        KSIZE=kernel_size, STRIDE=stride, PAD=padding, DIL=dilation,
        BLOCK_R=BLOCK_R, BLOCK_O=BLOCK_O,
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return max_pool1d_triton(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
