"""Honest: a small launcher class with a size heuristic and shape checks (asserts, not special cases)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_stride + offs, y, mask=mask)


class RowSoftmax:
    def __init__(self, max_block: int = 4096) -> None:
        self.max_block = max_block

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2, "expects a 2D input"
        n_rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        assert block <= self.max_block
        num_warps = 8 if n_cols > 2048 else 4
        y = torch.empty_like(x)
        _softmax_rows[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK=block, num_warps=num_warps)
        return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = RowSoftmax()

    def forward(self, x):
        shape = x.shape
        y = self.softmax(x.reshape(-1, shape[-1]).contiguous())
        return y.reshape(shape)
