import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fma_row_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # one program per row
    row = tl.program_id(axis=0)
    row_start = row * BLOCK_SIZE
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row_start + cols, mask=mask)
    y = tl.load(y_ptr + row_start + cols, mask=mask)
    z = tl.load(z_ptr + row_start + cols, mask=mask)
    tl.store(out_ptr + row_start + cols, x * y + z, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        x, y, z = x.contiguous(), y.contiguous(), z.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        fma_row_kernel[(n_rows,)](x, y, z, out, n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return out
