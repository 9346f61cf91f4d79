import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_fwd_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, xc * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int, length: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm((channels, length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-2] * x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        out = torch.empty_like(x2)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        layernorm_fwd_kernel[(x2.shape[0],)](
            x2, self.ln.weight, self.ln.bias, out, n_cols, self.ln.eps, BLOCK_SIZE=BLOCK_SIZE
        )
        return out.reshape(x.shape)
