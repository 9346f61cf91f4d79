import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def p3_norm_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=mask, other=0.0)
    cubes = tl.abs(x) * x * x
    total = tl.sum(cubes, axis=0)
    norm = tl.exp(tl.log(total) / 3.0)
    tl.store(out_ptr + row, norm)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        p3_norm_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK_SIZE=BLOCK_SIZE)
        return out
