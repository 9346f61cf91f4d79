import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mul(a, b):
    return a * b


@triton.autotune(configs=[triton.Config({"BLOCK_N": 16}, num_warps=2)], key=["n_cols"])
@triton.jit
def row_prod_kernel(x_ptr, out_ptr, n_cols, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    acc = tl.full([BLOCK_N], 1.0, dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + offs
        x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < n_cols, other=1.0)
        acc = acc * x.to(tl.float32)
    prod = tl.reduce(acc, 0, _mul)
    tl.store(out_ptr + row, prod)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        row_prod_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1))
        return out
