import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _logit_k(X, Y, N, sx, sy, eps, B: tl.constexpr):
    r = tl.program_id(0)
    c = tl.program_id(1) * B + tl.arange(0, B)
    m = c < N
    x = tl.load(X + r * sx + c, mask=m, other=0.5)
    x = tl.minimum(tl.maximum(x, eps), 1.0 - eps)  # keep log() finite
    y = tl.log(x / (1.0 - x))
    tl.store(Y + r * sy + c, y, mask=m)


def logit(x, eps):
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    M, N = x2.shape
    y = torch.empty_like(x2)
    B = 128
    _logit_k[(M, triton.cdiv(N, B))](x2, y, N, x2.stride(0), y.stride(0), eps, B=B)
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-3) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return logit(x, self.eps)
