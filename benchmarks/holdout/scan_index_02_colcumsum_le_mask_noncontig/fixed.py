import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_dim0_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    # each program owns a strip of columns and walks down the rows carrying the running sum
    pid = tl.program_id(0)
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs_n < n_cols
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for r in range(0, n_rows):
        x = tl.load(x_ptr + r * n_cols + offs_n, mask=mask, other=0.0)
        acc += x.to(tl.float32)
        tl.store(y_ptr + r * n_cols + offs_n, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        BLOCK_N = 16
        cumsum_dim0_kernel[(triton.cdiv(n_cols, BLOCK_N),)](x, y, n_rows, n_cols, BLOCK_N=BLOCK_N)
        return y
