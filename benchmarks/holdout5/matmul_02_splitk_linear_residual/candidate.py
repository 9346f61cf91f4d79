import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


# Split-K GEMM: the K dimension is cut into SPLIT_K slices, each program computes a partial
# (BLOCK_M, BLOCK_N) product over its slice into a workspace; a second kernel sums the slices
# and applies the epilogue (bias + residual). No atomics, so the result is deterministic.
@triton.jit
def splitk_gemm_partial_kernel(
    x_ptr, w_ptr, partial_ptr,
    M, N, K, k_per_split,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_ps, stride_pm, stride_pn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_mn = tl.program_id(0)
    pid_k = tl.program_id(1)
    n_tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid_mn // n_tiles_n
    pid_n = pid_mn % n_tiles_n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)

    k_lo = pid_k * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi, BLOCK_K):
        kk = k + rk
        # x tile: (BLOCK_M, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < k_hi), other=0.0)
        # W is (N, K): read W^T tile (BLOCK_K, BLOCK_N)
        b = tl.load(w_ptr + rn[None, :] * stride_wn + kk[:, None] * stride_wk,
                    mask=(kk[:, None] < k_hi) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)

    p_ptrs = partial_ptr + pid_k * stride_ps + rm[:, None] * stride_pm + rn[None, :] * stride_pn
    tl.store(p_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def splitk_reduce_epilogue_kernel(
    partial_ptr, bias_ptr, res_ptr, out_ptr,
    M, N,
    stride_ps,
    SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    col = offs % N

    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        total += tl.load(partial_ptr + s * stride_ps + offs, mask=mask, other=0.0)

    bias = tl.load(bias_ptr + col, mask=mask, other=0.0)
    res = tl.load(res_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, total + bias + res, mask=mask)


def linear_bias_residual(x, weight, bias, residual, split_k=4):
    K = x.shape[-1]
    N = weight.shape[0]
    if x.numel() == 0:
        # degenerate input: nothing for the kernels to do
        return F.linear(x, weight, bias) + residual

    x2d = x.reshape(-1, K)
    res2d = residual.reshape(-1, N).contiguous()
    M = x2d.shape[0]

    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 16
    k_per_split = K // split_k

    partial = torch.empty((split_k, M, N), device=x.device, dtype=torch.float32)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), split_k)
    splitk_gemm_partial_kernel[grid](
        x2d, weight, partial,
        M, N, K, k_per_split,
        x2d.stride(0), x2d.stride(1),
        weight.stride(0), weight.stride(1),
        partial.stride(0), partial.stride(1), partial.stride(2),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
    )

    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    BLOCK = 1024
    splitk_reduce_epilogue_kernel[(triton.cdiv(M * N, BLOCK),)](
        partial, bias, res2d, out,
        M, N,
        partial.stride(0),
        SPLIT_K=split_k, BLOCK=BLOCK,
    )
    return out.view(*x.shape[:-1], N)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return linear_bias_residual(x, self.proj.weight, self.proj.bias, residual)
