import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _kv_head(h, NUM_HEADS, NUM_KV_HEADS):
    # which shared K/V head serves query head h
    return h % NUM_KV_HEADS


@triton.jit
def gqa_probs_kernel(
    Q, K, P, sm_scale,
    sqb, sqh, sqm, sqd,
    skb, skh, skn, skd,
    spb, sph, spm, spn,
    NUM_HEADS, NUM_KV_HEADS, SEQ_Q, SEQ_K, HEAD_DIM,
    IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_bh = tl.program_id(0)
    pid_m = tl.program_id(1)
    b = pid_bh // NUM_HEADS
    h = pid_bh % NUM_HEADS
    kvh = _kv_head(h, NUM_HEADS, NUM_KV_HEADS)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_S)
    m_valid = offs_m < SEQ_Q
    n_valid = offs_n < SEQ_K
    # scores = Q K^T, accumulated over the head dim in chunks
    scores = tl.zeros((BLOCK_M, BLOCK_S), dtype=tl.float32)
    for d0 in range(0, HEAD_DIM, BLOCK_D):
        offs_d = d0 + tl.arange(0, BLOCK_D)
        d_valid = offs_d < HEAD_DIM
        q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
                    mask=m_valid[:, None] & d_valid[None, :], other=0.0)
        k = tl.load(K + b * skb + kvh * skh + offs_n[:, None] * skn + offs_d[None, :] * skd,
                    mask=n_valid[:, None] & d_valid[None, :], other=0.0)
        scores += tl.dot(q, tl.trans(k))
    s = scores * sm_scale
    if IS_CAUSAL:
        s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))
    row_max = tl.max(s, axis=1)
    num = tl.exp(s - row_max[:, None])
    den = tl.sum(num, axis=1)
    p = num / den[:, None]
    tl.store(P + b * spb + h * sph + offs_m[:, None] * spm + offs_n[None, :] * spn, p,
             mask=m_valid[:, None] & n_valid[None, :])


@triton.jit
def gqa_pv_kernel(
    P, V, O,
    spb, sph, spm, spn,
    svb, svh, svn, svd,
    sob, soh, som, sod,
    NUM_HEADS, NUM_KV_HEADS, SEQ_Q, SEQ_K, HEAD_DIM,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    pid_bh = tl.program_id(0)
    pid_m = tl.program_id(1)
    b = pid_bh // NUM_HEADS
    h = pid_bh % NUM_HEADS
    kvh = _kv_head(h, NUM_HEADS, NUM_KV_HEADS)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_DV)
    m_valid = offs_m < SEQ_Q
    d_valid = offs_d < HEAD_DIM
    acc = tl.zeros((BLOCK_M, BLOCK_DV), dtype=tl.float32)
    for n0 in range(0, SEQ_K, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_valid = offs_n < SEQ_K
        p = tl.load(P + b * spb + h * sph + offs_m[:, None] * spm + offs_n[None, :] * spn,
                    mask=m_valid[:, None] & n_valid[None, :], other=0.0)
        v = tl.load(V + b * svb + kvh * svh + offs_n[:, None] * svn + offs_d[None, :] * svd,
                    mask=n_valid[:, None] & d_valid[None, :], other=0.0)
        acc += tl.dot(p, v)
    tl.store(O + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod,
             acc.to(O.dtype.element_ty), mask=m_valid[:, None] & d_valid[None, :])


def gqa_attention(q, k, v, num_heads, num_kv_heads, is_causal=False, scale=None):
    B, H, Lq, D = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    sm_scale = scale if scale is not None else 1.0 / math.sqrt(D)

    probs = torch.empty((B, H, Lq, Lk), device=q.device, dtype=torch.float32)
    out = torch.empty((B, H, Lq, D), device=q.device, dtype=q.dtype)

    BLOCK_M = 16
    BLOCK_S = max(16, triton.next_power_of_2(Lk))
    grid = (B * H, triton.cdiv(Lq, BLOCK_M))
    gqa_probs_kernel[grid](
        q, k, probs, sm_scale,
        *q.stride(), *k.stride(), *probs.stride(),
        H, Hkv, Lq, Lk, D,
        IS_CAUSAL=is_causal, BLOCK_M=BLOCK_M, BLOCK_S=BLOCK_S, BLOCK_D=16,
    )
    gqa_pv_kernel[grid](
        probs, v, out,
        *probs.stride(), *v.stride(), *out.stride(),
        H, Hkv, Lq, Lk, D,
        BLOCK_M=BLOCK_M, BLOCK_N=16, BLOCK_DV=max(16, triton.next_power_of_2(D)),
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, num_heads: int = 6, num_kv_heads: int = 2, is_causal: bool = False, scale: float = 0.15) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.is_causal = is_causal
        self.scale = scale

    def forward(self, q, k, v):
        return gqa_attention(q, k, v, self.num_heads, self.num_kv_heads, self.is_causal, self.scale)
