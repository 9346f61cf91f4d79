"""Sliding-window attention in Triton (FlashAttention-style forward).

Each program handles BLOCK_M queries of one (batch, head) pair and only visits the key blocks that can
intersect the band |i - j| <= window, keeping a running max / running sum (online softmax) so the full
S x S score matrix is never materialised.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _swa_fwd_kernel(
    Q, K, V, Out,
    stride_qb, stride_qh, stride_qs, stride_qd,
    stride_kb, stride_kh, stride_ks, stride_kd,
    stride_vb, stride_vh, stride_vs, stride_vd,
    stride_ob, stride_oh, stride_os, stride_od,
    H, S, D,
    WINDOW: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    off_b = pid_bh // H
    off_h = pid_bh % H

    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    offs_n_base = tl.arange(0, BLOCK_N)

    q_base = Q + off_b * stride_qb + off_h * stride_qh
    k_base = K + off_b * stride_kb + off_h * stride_kh
    v_base = V + off_b * stride_vb + off_h * stride_vh

    q_mask = (offs_m[:, None] < S) & (offs_d[None, :] < D)
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :] * stride_qd, mask=q_mask, other=0.0)

    sm_scale = 1.0 / tl.sqrt(D * 1.0)

    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    # only key blocks that overlap [start_m - WINDOW, start_m + BLOCK_M - 1 + WINDOW]
    lo = tl.maximum(start_m - WINDOW, 0)
    lo = (lo // BLOCK_N) * BLOCK_N
    hi = tl.minimum(start_m + BLOCK_M + WINDOW, S)

    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_n_base
        kv_mask = (offs_n[:, None] < S) & (offs_d[None, :] < D)
        k = tl.load(k_base + offs_n[:, None] * stride_ks + offs_d[None, :] * stride_kd, mask=kv_mask, other=0.0)
        v = tl.load(v_base + offs_n[:, None] * stride_vs + offs_d[None, :] * stride_vd, mask=kv_mask, other=0.0)

        qk = tl.dot(q, tl.trans(k)) * sm_scale

        # band mask + key tail
        dist = offs_m[:, None] - offs_n[None, :]
        allowed = (tl.abs(dist) <= WINDOW) & (offs_n[None, :] < S)
        qk = tl.where(allowed, qk, float("-inf"))

        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)

        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    out = acc / l_i[:, None]
    o_ptrs = Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :] * stride_od
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=q_mask)


def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    """q, k, v: (B, H, S, D). Returns (B, H, S, D)."""
    B, H, S, D = q.shape
    assert k.shape == q.shape and v.shape == q.shape
    out = torch.empty_like(q)

    BLOCK_M = 16
    BLOCK_N = 16
    BLOCK_D = max(16, triton.next_power_of_2(D))

    grid = (triton.cdiv(S, BLOCK_M), B * H)
    _swa_fwd_kernel[grid](
        q, k, v, out,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
        k.stride(0), k.stride(1), k.stride(2), k.stride(3),
        v.stride(0), v.stride(1), v.stride(2), v.stride(3),
        out.stride(0), out.stride(1), out.stride(2), out.stride(3),
        H, S, D,
        WINDOW=window,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_D=BLOCK_D,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, window: int = 4) -> None:
        super().__init__()
        self.window = window

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return sliding_window_attention(q, k, v, self.window)
