import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def standardize_kernel(x_ptr, out_ptr, stride_row, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    std = tl.sqrt(var)
    tl.store(out_ptr + row * stride_row + cols, diff / (std + eps), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        standardize_kernel[(n_rows,)](x, out, x.stride(0), n_cols, self.eps, BLOCK=triton.next_power_of_2(n_cols))
        return out
