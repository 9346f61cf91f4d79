import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_rows_kernel(x_ptr, out_ptr, stride_row, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(x, 0.0), mask=mask)


def relu_rows(x):
    out = torch.empty((x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    relu_rows_kernel[(x.shape[0],)](x, out, x.strides[0], x.shape[1], BLOCK=512)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_rows(x)
