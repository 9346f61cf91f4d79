import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh2_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n, mask=mask, other=0.0)
    y = (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) * 2.0
    tl.store(out_ptr + row * n + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, n = x.shape
        tanh2_rows[(rows,)](x, out, n, BLOCK=triton.next_power_of_2(n))
        return out
