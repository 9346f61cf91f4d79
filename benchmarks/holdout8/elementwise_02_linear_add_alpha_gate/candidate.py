import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_alpha_gate_kernel(
    y_ptr, res_ptr, gate_ptr, out_ptr,
    M, N,
    stride_m, stride_n,
    alpha,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """out = add(residual, y, alpha) * gate, one block of rows per program."""
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M

    # walk across the feature dimension in BLOCK_N wide chunks
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_mask = cols < N
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows[:, None] * stride_m + cols[None, :] * stride_n

        y = tl.load(y_ptr + offs, mask=mask, other=0.0)
        r = tl.load(res_ptr + offs, mask=mask, other=0.0)
        g = tl.load(gate_ptr + cols, mask=col_mask, other=0.0)

        z = (y + alpha * r) * g[None, :]
        tl.store(out_ptr + offs, z, mask=mask)


def fused_add_alpha_gate(y, residual, gate, alpha):
    M, N = y.shape
    out = torch.empty_like(y)
    BLOCK_M, BLOCK_N = 4, 32
    grid = (triton.cdiv(M, BLOCK_M),)
    add_alpha_gate_kernel[grid](
        y, residual, gate, out,
        M, N,
        y.stride(0), y.stride(1),
        alpha,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, alpha: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gate = nn.Parameter(torch.randn(out_features))
        self.alpha = alpha

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)  # GEMM stays on cuBLAS
        return fused_add_alpha_gate(y, residual, self.gate, self.alpha)
