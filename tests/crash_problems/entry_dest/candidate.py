import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_rows_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * 2.0, mask=mask)


# The caller allocates the output and passes the sizes; nothing is returned.
def double_rows(x, output, n_rows, n_cols):
    double_rows_kernel[(n_rows,)](x, output, n_cols, BLOCK=triton.next_power_of_2(n_cols))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return double_rows(x)
