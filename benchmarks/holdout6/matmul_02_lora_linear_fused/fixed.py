import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def lora_down_kernel(
    x_ptr, a_ptr, xa_ptr,
    M, K, R,
    stride_xm, stride_xk,
    stride_ar, stride_ak,
    stride_tm, stride_tr,
    BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """First pass of the LoRA branch: xa = x @ A^T, a thin (M, R) matrix.

    Each program owns BLOCK_M rows of x and all R (padded to BLOCK_R) columns of xa.
    """
    pid_m = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_r = tl.arange(0, BLOCK_R)
    offs_k = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        x_tile = tl.load(
            x_ptr + offs_m[:, None] * stride_xm + kk[None, :] * stride_xk,
            mask=(offs_m[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        # A is (R, K); we read it transposed as a (BLOCK_K, BLOCK_R) tile
        a_tile = tl.load(
            a_ptr + offs_r[None, :] * stride_ar + kk[:, None] * stride_ak,
            mask=(offs_r[None, :] < R) & (kk[:, None] < K),
            other=0.0,
        )
        acc += tl.dot(x_tile, a_tile)

    tl.store(
        xa_ptr + offs_m[:, None] * stride_tm + offs_r[None, :] * stride_tr,
        acc.to(xa_ptr.dtype.element_ty),
        mask=(offs_m[:, None] < M) & (offs_r[None, :] < R),
    )


@triton.jit
def lora_linear_fused_kernel(
    x_ptr, w_ptr, bias_ptr, xa_ptr, b_ptr, y_ptr,
    M, N, K, R,
    scaling,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_tm, stride_tr,
    stride_bn, stride_br,
    stride_ym, stride_yn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_R: tl.constexpr,
):
    """Second pass: y = x @ W^T + bias + scaling * xa @ B^T, one (BLOCK_M, BLOCK_N) output tile per program."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N

    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    # W is (N, K) row-major: load a (BLOCK_K, BLOCK_N) tile of W^T
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk

    # ---- main GEMM over the input features ----
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x_tile = tl.load(x_ptrs, mask=m_mask[:, None] & (offs_k[None, :] < K - k0), other=0.0)
        w_tile = tl.load(w_ptrs, mask=n_mask[None, :] & (offs_k[:, None] < K - k0), other=0.0)
        acc += tl.dot(x_tile, w_tile)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    # ---- low-rank update: xa (BLOCK_M, R) @ B^T (R, BLOCK_N) ----
    offs_r = tl.arange(0, BLOCK_R)
    xa = tl.load(
        xa_ptr + offs_m[:, None] * stride_tm + offs_r[None, :] * stride_tr,
        mask=m_mask[:, None] & (offs_r[None, :] < R),
        other=0.0,
    ).to(tl.float32)
    b_t = tl.load(
        b_ptr + offs_n[None, :] * stride_bn + offs_r[:, None] * stride_br,
        mask=n_mask[None, :] & (offs_r[:, None] < R),
        other=0.0,
    )
    acc += scaling * tl.dot(xa, b_t)

    # ---- bias epilogue ----
    bias = tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0)
    acc += bias[None, :]

    tl.store(
        y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn,
        acc.to(y_ptr.dtype.element_ty),
        mask=m_mask[:, None] & n_mask[None, :],
    )


def lora_linear(x, weight, bias, lora_A, lora_B, scaling):
    """Fused LoRA linear: x @ W^T + bias + scaling * (x @ A^T) @ B^T.

    Args:
        x: (..., K) activations.
        weight: (N, K) frozen base weight.
        bias: (N,) bias.
        lora_A: (R, K) down projection.
        lora_B: (N, R) up projection.
        scaling: lora_alpha / r.
    Returns:
        (..., N) tensor with the dtype of x.
    """
    assert x.shape[-1] == weight.shape[1], "in_features mismatch"
    lead_shape = x.shape[:-1]
    x2d = x.reshape(-1, x.shape[-1])
    M, K = x2d.shape
    N = weight.shape[0]
    R = lora_A.shape[0]

    BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 16
    BLOCK_R = max(16, triton.next_power_of_2(R))  # tl.dot wants every dim >= 16

    # intermediate of the low-rank branch; it is tiny, so keep it in half precision
    xa = torch.empty((M, R), device=x.device, dtype=torch.float32)
    lora_down_kernel[(triton.cdiv(M, BLOCK_M),)](
        x2d, lora_A, xa,
        M, K, R,
        x2d.stride(0), x2d.stride(1),
        lora_A.stride(0), lora_A.stride(1),
        xa.stride(0), xa.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_R=BLOCK_R, BLOCK_K=BLOCK_K,
    )

    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    lora_linear_fused_kernel[grid](
        x2d, weight, bias, xa, lora_B, y,
        M, N, K, R,
        scaling,
        x2d.stride(0), x2d.stride(1),
        weight.stride(0), weight.stride(1),
        xa.stride(0), xa.stride(1),
        lora_B.stride(0), lora_B.stride(1),
        y.stride(0), y.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, BLOCK_R=BLOCK_R,
    )
    return y.reshape(*lead_shape, N)


class ModelNew(nn.Module):
    """LoRA linear layer whose forward runs two Triton kernels (down projection, then fused GEMM + update)."""

    def __init__(self, in_features: int, out_features: int, r: int = 4, lora_alpha: float = 16.0) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.r = r
        self.lora_alpha = lora_alpha
        self.scaling = lora_alpha / r
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / math.sqrt(in_features))
        self.bias = nn.Parameter(0.1 * torch.randn(out_features))
        self.lora_A = nn.Parameter(torch.randn(r, in_features) / math.sqrt(in_features))
        self.lora_B = nn.Parameter(0.5 * torch.randn(out_features, r))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return lora_linear(x, self.weight, self.bias, self.lora_A, self.lora_B, self.scaling)
