import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumprod_kernel(x_ptr, y_ptr, n, stride_xr, stride_xc, stride_yr, stride_yc, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 1.0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * stride_xr + offs * stride_xc, mask=mask, other=1.0).to(tl.float32)
        p = tl.cumprod(x, axis=0) * carry
        tl.store(y_ptr + row * stride_yr + offs * stride_yc, p, mask=mask)
        # carry the last inclusive product of this block into the next one
        carry = tl.max(tl.where(offs == start + BLOCK - 1, p, float("-inf")), axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2 and self.dim in (1, -1)
        n_rows, n = x.shape
        y = torch.empty_like(x)
        cumprod_kernel[(n_rows,)](
            x, y, n, x.stride(0), x.stride(1), y.stride(0), y.stride(1), BLOCK=256,
        )
        return y
