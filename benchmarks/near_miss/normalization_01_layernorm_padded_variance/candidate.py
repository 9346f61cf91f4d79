import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layer_norm_fwd(X, Y, W, B, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = x - mean
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(N)
        _layer_norm_fwd[(M,)](
            x, y, self.ln.weight, self.ln.bias, x.stride(0), N, self.ln.eps, BLOCK_SIZE=BLOCK_SIZE
        )
        return y
