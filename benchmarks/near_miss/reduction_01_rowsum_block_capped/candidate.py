import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        # keep the block small enough for registers
        BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 512)
        row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK_SIZE=BLOCK_SIZE)
        return out
