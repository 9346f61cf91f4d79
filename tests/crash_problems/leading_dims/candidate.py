import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, K, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < K
    x = tl.load(x_ptr + row * K + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / K + 1e-6)
    tl.store(out_ptr + row * K + cols, x * rstd * w, mask=mask)


def rmsnorm(x, w):
    """Rows of a 2-D input."""
    M, K = x.shape
    x = x.contiguous()
    out = torch.empty_like(x)
    rmsnorm_kernel[(M,)](x, w, out, K, BLOCK=triton.next_power_of_2(K))
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return rmsnorm(x, w)
