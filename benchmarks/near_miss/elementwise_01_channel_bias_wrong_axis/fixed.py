import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_channel_bias_kernel(x_ptr, bias_ptr, out_ptr, n_elements, C, L, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    # channel index of each element for the broadcast
    c = (offs // L) % C
    b = tl.load(bias_ptr + c, mask=mask)
    tl.store(out_ptr + offs, x + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        bias = bias.contiguous()
        B, C, L = x.shape
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 1024
        add_channel_bias_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, bias, out, n, C, L, BLOCK_SIZE=BLOCK_SIZE)
        return out
