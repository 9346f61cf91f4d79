import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumprod_kernel(x_ptr, y_ptr, L, sx0, sx1, sy0, BLOCK_L: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_L)
    mask = offs < L
    x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=1.0)
    y = tl.cumprod(x, axis=0)
    tl.store(y_ptr + row * sy0 + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L = x.shape
        y = torch.empty((B, L), device=x.device, dtype=x.dtype)
        cumprod_kernel[(B,)](x, y, L, x.stride(0), x.stride(1), y.stride(0), BLOCK_L=triton.next_power_of_2(L))
        return y
