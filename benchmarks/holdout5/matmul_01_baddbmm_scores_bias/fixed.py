import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=2)],
    key=["M", "N", "K"],
)
@triton.jit
def baddbmm_kernel(
    bias_ptr, q_ptr, k_ptr, out_ptr,
    M, N, K,
    stride_bias_b, stride_bias_m, stride_bias_n,
    stride_qb, stride_qm, stride_qk,
    stride_kb, stride_kk, stride_kn,
    stride_ob, stride_om, stride_on,
    alpha, beta,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """Computes one (BLOCK_M, BLOCK_N) tile of the scaled, bias-added batched product q[b] @ kT[b].

    The second operand is read as a (K, N) matrix through its strides, so the transposed key
    tensor never has to be materialised.
    """
    pid = tl.program_id(axis=0)
    pid_batch = tl.program_id(axis=1)

    # Grouped ordering of the tiles for better L2 reuse.
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    q_ptrs = q_ptr + pid_batch * stride_qb + offs_m[:, None] * stride_qm + offs_k[None, :] * stride_qk
    k_ptrs = k_ptr + pid_batch * stride_kb + offs_k[:, None] * stride_kk + offs_n[None, :] * stride_kn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        k_remaining = K - k0 * BLOCK_K
        a = tl.load(q_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_remaining), other=0.0)
        b = tl.load(k_ptrs, mask=(offs_k[:, None] < k_remaining) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        q_ptrs += BLOCK_K * stride_qk
        k_ptrs += BLOCK_K * stride_kk

    # Epilogue: scale the product and add the scaled bias.
    tile_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    bias_ptrs = bias_ptr + pid_batch * stride_bias_b + offs_m[:, None] * stride_bias_m + offs_n[None, :] * stride_bias_n
    bias_tile = tl.load(bias_ptrs, mask=tile_mask, other=0.0).to(tl.float32)
    result = beta * bias_tile + alpha * acc

    out_ptrs = out_ptr + pid_batch * stride_ob + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, result.to(out_ptr.dtype.element_ty), mask=tile_mask)


def fused_baddbmm_qkT(bias: torch.Tensor, q: torch.Tensor, k: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """baddbmm of bias with q @ k.transpose(1, 2) for q: (B, M, D), k: (B, N, D), bias: (B, M, N)."""
    assert q.dim() == 3 and k.dim() == 3 and bias.dim() == 3, "expected batched 3-D tensors"
    B, M, D = q.shape
    Bk, N, Dk = k.shape
    assert B == Bk and D == Dk, "q and k must agree on batch and head_dim"
    assert bias.shape == (B, M, N), "bias must be (B, M, N)"

    out = torch.empty((B, M, N), device=q.device, dtype=q.dtype)

    # k is (B, N, D); the kernel walks it as the (D, N) operand kT, i.e. (stride over D, stride over N).
    stride_kb, stride_kk, stride_kn = k.stride(0), k.stride(2), k.stride(1)

    grid = lambda meta: (  # noqa: E731
        triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),
        B,
    )
    baddbmm_kernel[grid](
        bias, q, k, out,
        M, N, D,
        bias.stride(0), bias.stride(1), bias.stride(2),
        q.stride(0), q.stride(1), q.stride(2),
        stride_kb, stride_kk, stride_kn,
        out.stride(0), out.stride(1), out.stride(2),
        float(alpha), float(beta),
    )
    return out


class ModelNew(nn.Module):
    """Triton replacement for torch.baddbmm(bias, q, k.transpose(1, 2), beta=beta, alpha=alpha)."""

    def __init__(self, alpha: float, beta: float) -> None:
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, bias: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return fused_baddbmm_qkT(bias, q, k, self.alpha, self.beta)
