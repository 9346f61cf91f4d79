import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exclusive_cumsum_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_xc, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs * stride_xc, mask=mask, other=0.0)
    inclusive = tl.cumsum(x, axis=0)
    tl.store(y_ptr + row * stride_y + offs, inclusive, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        y = torch.empty_like(x, memory_format=torch.contiguous_format)
        exclusive_cumsum_kernel[(rows,)](x, y, cols, x.stride(0), x.stride(1), y.stride(0),
                                         BLOCK=triton.next_power_of_2(cols))
        return y
