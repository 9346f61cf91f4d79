import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _load_tile(base, offs_r, offs_c, stride_r, stride_c, n_r, n_c):
    """Masked load of a [len(offs_r), len(offs_c)] tile; out-of-range entries read as 0."""
    ptrs = base + offs_r[:, None] * stride_r + offs_c[None, :] * stride_c
    mask = (offs_r[:, None] < n_r) & (offs_c[None, :] < n_c)
    return tl.load(ptrs, mask=mask, other=0.0)


@triton.jit
def _online_softmax_step(m_i, l_i, acc, scores, v):
    """One step of the streaming softmax: rescale the running state by the new row max."""
    m_new = tl.maximum(m_i, tl.max(scores, axis=1))
    alpha = tl.exp(m_i - m_new)
    p = tl.exp(scores - m_new[:, None])
    l_new = l_i * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None] + tl.dot(p, v)
    return m_new, l_new, acc


@triton.jit
def _cross_attn_fwd(
    Q, K, V, Out,
    sm_scale,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_om, stride_od,
    n_heads, Lq, Lk, head_dim,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // n_heads
    h = pid_bh % n_heads

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)

    q_base = Q + b * stride_qb + h * stride_qh
    k_base = K + b * stride_kb + h * stride_kh
    v_base = V + b * stride_vb + h * stride_vh

    q = _load_tile(q_base, offs_m, offs_d, stride_qm, stride_qd, Lq, head_dim)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)

    # iterate over the encoder (key/value) sequence
    num_kv_blocks = Lk // BLOCK_N
    for blk in range(0, num_kv_blocks):
        start_n = blk * BLOCK_N
        kv_rows = start_n + offs_n
        k = _load_tile(k_base, kv_rows, offs_d, stride_kn, stride_kd, Lk, head_dim)
        v = _load_tile(v_base, kv_rows, offs_d, stride_vn, stride_vd, Lk, head_dim)

        scores = tl.dot(q, tl.trans(k)) * sm_scale
        # keys past the end of the encoder sequence must not receive probability mass
        scores = tl.where(kv_rows[None, :] < Lk, scores, float("-inf"))
        m_i, l_i, acc = _online_softmax_step(m_i, l_i, acc, scores, v)

    out = acc / l_i[:, None]

    o_ptrs = Out + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    o_mask = (offs_m[:, None] < Lq) & (offs_d[None, :] < head_dim)
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=o_mask)


def cross_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    B, H, Lq, D = q.shape
    Lk = k.shape[2]
    assert k.shape == (B, H, Lk, D) and v.shape == (B, H, Lk, D), "k/v must share batch, heads, head_dim"

    out = torch.empty((B, H, Lq, D), device=q.device, dtype=q.dtype)

    BLOCK_M = 16
    BLOCK_N = 16
    BLOCK_D = max(16, triton.next_power_of_2(D))
    grid = (triton.cdiv(Lq, BLOCK_M), B * H)
    _cross_attn_fwd[grid](
        q, k, v, out,
        scale,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
        k.stride(0), k.stride(1), k.stride(2), k.stride(3),
        v.stride(0), v.stride(1), v.stride(2), v.stride(3),
        out.stride(0), out.stride(1), out.stride(2), out.stride(3),
        H, Lq, Lk, D,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if q.shape[-1] > 256:
            # head dims this large do not fit a single register tile; fall back to eager PyTorch
            attn = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * self.scale, dim=-1)
            return torch.matmul(attn, v)
        return cross_attention(q, k, v, self.scale)
