import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_fwd(X, W, Y, sx, sy, N, eps, BN: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BN)
    m = c < N
    x = tl.load(X + r * sx + c, mask=m, other=0.).to(tl.float32)
    w = tl.load(W + c, mask=m, other=0.).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / N
    y = x * tl.rsqrt(ms + eps) * (1. + w)
    tl.store(Y + r * sy + c, y.to(Y.dtype.element_ty), mask=m)


def gemma_rmsnorm(x, w, eps):
    shp = x.shape
    x2 = x.reshape(-1, shp[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    M, N = x2.shape
    y = torch.empty_like(x2)
    BN = triton.next_power_of_2(N)
    nw = 4 if BN <= 1024 else 8
    _rms_fwd[(M,)](x2, w, y, x2.stride(0), y.stride(0), N, eps, BN=BN, num_warps=nw)
    return y.view(shp)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(0.1 * torch.randn(hidden_size))

    def forward(self, x):
        return gemma_rmsnorm(x, self.weight, self.eps)
