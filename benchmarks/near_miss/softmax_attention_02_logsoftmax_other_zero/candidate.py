import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0)
    x_max = tl.max(x, axis=0)
    shifted = x - x_max
    log_sum = tl.log(tl.sum(tl.exp(shifted), axis=0))
    tl.store(y_ptr + row * stride_y + offs, shifted - log_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        log_softmax_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return y
