import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _gelu_erf(x):
    # exact GELU: 0.5 * x * (1 + erf(x / sqrt(2)))
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))


@triton.jit
def _ln_gelu_residual_kernel(
    y_ptr, w_ptr, b_ptr, out_ptr,
    n_rows, n_cols,
    stride_y, stride_out,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # each program normalises a [BLOCK_M, BLOCK_N] tile = BLOCK_M full rows
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    col_mask = cols < n_cols
    mask = row_mask[:, None] & col_mask[None, :]

    y = tl.load(y_ptr + rows[:, None] * stride_y + cols[None, :], mask=mask, other=0.0).to(tl.float32)

    # row statistics in fp32
    mean = tl.sum(y, axis=1) / n_cols
    centered = y - mean[:, None]
    var = tl.sum(centered * centered, axis=1) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)

    gamma = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    beta = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    z = centered * rstd[:, None] * gamma[None, :] + beta[None, :]

    out = _gelu_erf(z) + y
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], out, mask=mask)


def fused_layernorm_gelu_residual(y: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    orig_shape = y.shape
    y2d = y.reshape(-1, orig_shape[-1]).contiguous()
    n_rows, n_cols = y2d.shape
    out = torch.empty_like(y2d)

    BLOCK_N = triton.next_power_of_2(n_cols)
    BLOCK_M = 8
    grid = (n_rows // BLOCK_M,)
    _ln_gelu_residual_kernel[grid](
        y2d, weight, bias, out,
        n_rows, n_cols,
        y2d.stride(0), out.stride(0),
        eps,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
    )
    return out.view(orig_shape)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # GEMM stays in torch; LayerNorm + GELU + residual are fused in one Triton kernel
        y = F.linear(x, self.linear.weight, self.linear.bias)
        return fused_layernorm_gelu_residual(y, self.norm.weight, self.norm.bias, self.norm.eps)
