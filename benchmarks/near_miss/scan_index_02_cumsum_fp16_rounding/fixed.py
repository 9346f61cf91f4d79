import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def running_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_r, stride_c, stride_or,
                       BLOCK_R: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    acc = tl.zeros([BLOCK_R], dtype=tl.float16)
    for i in range(0, n_cols):
        v = tl.load(x_ptr + rows * stride_r + i * stride_c, mask=rmask, other=0.0)
        acc = acc + v
        tl.store(out_ptr + rows * stride_or + i, acc, mask=rmask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        BLOCK_R = 8
        running_sum_kernel[(triton.cdiv(n_rows, BLOCK_R),)](
            x, out, n_rows, n_cols, x.stride(0), x.stride(1), out.stride(0), BLOCK_R=BLOCK_R
        )
        return out
