import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, r_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    # upcast for the arithmetic
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.maximum(x + r, 0.0)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        out = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n_elements = x.numel()
        grid = (triton.cdiv(n_elements, 1024),)
        add_relu_kernel[grid](x, residual, out, n_elements, BLOCK_SIZE=1024)
        return out
