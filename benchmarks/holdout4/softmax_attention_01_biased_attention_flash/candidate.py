import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _attn_fwd_inner(
    acc, l_i, m_i, q,
    K_block_ptr, V_block_ptr, Bias_block_ptr,
    stride_kn, stride_vn, stride_bn,
    offs_m, offs_n, offs_d,
    seq_q, seq_k, head_dim, sm_scale,
    BLOCK_N: tl.constexpr,
):
    d_mask = offs_d < head_dim
    for start_n in range(0, seq_k, BLOCK_N):
        cur_n = start_n + offs_n
        kv_mask = (cur_n[:, None] < seq_k) & d_mask[None, :]
        k = tl.load(K_block_ptr + start_n * stride_kn, mask=kv_mask, other=0.0)

        # QK^T on tensor cores
        qk = tl.dot(q.to(tl.float16), tl.trans(k.to(tl.float16)))
        qk = qk * sm_scale
        b_mask = (offs_m[:, None] < seq_q) & (cur_n[None, :] < seq_k)
        qk += tl.load(Bias_block_ptr + start_n * stride_bn, mask=b_mask, other=0.0)

        # online softmax update
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.exp(m_i - m_ij)
        p = tl.exp(qk - m_ij[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)

        v = tl.load(V_block_ptr + start_n * stride_vn, mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(
    Q, K, V, Bias, Out,
    stride_qh, stride_qm, stride_qd,
    stride_kh, stride_kn, stride_kd,
    stride_vh, stride_vn, stride_vd,
    stride_bm, stride_bn,
    stride_oh, stride_om, stride_od,
    seq_q, seq_k, head_dim, sm_scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)  # flattened batch * heads

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)

    q_ptrs = Q + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
    k_ptrs = K + off_h * stride_kh + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd
    v_ptrs = V + off_h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
    b_ptrs = Bias + offs_m[:, None] * stride_bm + offs_n[None, :] * stride_bn

    q_mask = (offs_m[:, None] < seq_q) & (offs_d[None, :] < head_dim)
    q = tl.load(q_ptrs, mask=q_mask, other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    acc, l_i, m_i = _attn_fwd_inner(
        acc, l_i, m_i, q,
        k_ptrs, v_ptrs, b_ptrs,
        stride_kn, stride_vn, stride_bn,
        offs_m, offs_n, offs_d,
        seq_q, seq_k, head_dim, sm_scale,
        BLOCK_N=BLOCK_N,
    )

    acc = acc / l_i[:, None]
    o_ptrs = Out + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=q_mask)


def biased_attention(q, k, v, bias, sm_scale):
    B, H, Lq, D = q.shape
    Lk = k.shape[2]
    assert k.shape == (B, H, Lk, D) and v.shape == (B, H, Lk, D)
    assert bias.shape == (Lq, Lk)

    # fold batch and heads into one grid axis
    q3 = q.reshape(B * H, Lq, D)
    k3 = k.reshape(B * H, Lk, D)
    v3 = v.reshape(B * H, Lk, D)
    out = torch.empty((B * H, Lq, D), device=q.device, dtype=q.dtype)

    BLOCK_M = 32
    BLOCK_N = 32
    BLOCK_D = max(triton.next_power_of_2(D), 16)
    grid = (triton.cdiv(Lq, BLOCK_M), B * H)
    attn_fwd_kernel[grid](
        q3, k3, v3, bias, out,
        q3.stride(0), q3.stride(1), q3.stride(2),
        k3.stride(0), k3.stride(1), k3.stride(2),
        v3.stride(0), v3.stride(1), v3.stride(2),
        bias.stride(0), bias.stride(1),
        out.stride(0), out.stride(1), out.stride(2),
        Lq, Lk, D, sm_scale,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
    )
    return out.reshape(B, H, Lq, D)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, q, k, v, bias):
        return biased_attention(q, k, v, bias, self.scale)
