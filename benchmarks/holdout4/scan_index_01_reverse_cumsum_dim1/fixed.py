import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rcs_kernel(X, Y, L, BL: tl.constexpr):
    # one program per row; walk the row from its end in chunks of BL, carrying the running sum
    r = tl.program_id(0)
    o = tl.arange(0, BL)
    X += r * L
    Y += r * L
    carry = 0.0
    for s in range(0, L, BL):
        idx = L - 1 - (s + o)
        m = idx >= 0
        v = tl.load(X + idx, mask=m, other=0.0).to(tl.float32)
        c = tl.cumsum(v, axis=0) + carry
        tl.store(Y + idx, c, mask=m)
        carry += tl.sum(v, axis=0)


def reverse_cumsum(x, dim):
    dim = dim % x.ndim
    xt = x.movedim(dim, -1).contiguous()  # scan axis last
    L = xt.shape[-1]
    R = xt.numel() // L
    y = torch.empty(xt.shape, device=x.device, dtype=x.dtype)
    BL = min(triton.next_power_of_2(L), 32)
    _rcs_kernel[(R,)](xt, y, L, BL=BL)
    return y.movedim(-1, dim)


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return reverse_cumsum(x, self.dim)
