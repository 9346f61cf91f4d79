import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _frame_scores(x_base, w_ptr, t_offs, t_mask, H, stride_xt, stride_xh, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    """scores[t] = sum_h x[t, h] * w[h] for the BLOCK_T frames of one utterance, sweeping H in chunks."""
    scores = tl.zeros([BLOCK_T], dtype=tl.float32)
    for h0 in range(0, H, BLOCK_H):
        h_offs = h0 + tl.arange(0, BLOCK_H)
        h_mask = h_offs < H
        x = tl.load(
            x_base + t_offs[:, None] * stride_xt + h_offs[None, :] * stride_xh,
            mask=t_mask[:, None] & h_mask[None, :],
            other=0.0,
        ).to(tl.float32)
        w = tl.load(w_ptr + h_offs, mask=h_mask, other=0.0).to(tl.float32)
        scores += tl.sum(x * w[None, :], axis=1)
    return scores


@triton.jit
def attention_pool_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    T,
    H,
    stride_xn,
    stride_xt,
    stride_xh,
    stride_on,
    stride_oh,
    BLOCK_T: tl.constexpr,
    BLOCK_H: tl.constexpr,
):
    """One program per utterance.

    1. score every frame with the linear layer (dot with w, plus the scalar bias),
    2. softmax the scores over the time axis (max-subtracted for stability),
    3. write the attention-weighted sum of the frames, one BLOCK_H chunk of features at a time.
    The whole sequence is held in one BLOCK_T tile, so T <= BLOCK_T.
    """
    n = tl.program_id(0)
    x_base = x_ptr + n * stride_xn

    t_offs = tl.arange(0, BLOCK_T)
    t_mask = t_offs < T

    # --- 1. frame scores -------------------------------------------------------------------------
    scores = _frame_scores(x_base, w_ptr, t_offs, t_mask, H, stride_xt, stride_xh, BLOCK_T, BLOCK_H)
    scores += tl.load(b_ptr).to(tl.float32)
    scores = tl.where(t_mask, scores, float("-inf"))

    # --- 2. softmax over time ------------------------------------------------------------------------
    s_max = tl.max(scores, axis=0)
    p = tl.exp(scores - s_max)
    att = p / tl.sum(p, axis=0)

    # --- 3. weighted sum of the frames ---------------------------------------------------------------
    for h0 in range(0, H, BLOCK_H):
        h_offs = h0 + tl.arange(0, BLOCK_H)
        h_mask = h_offs < H
        x = tl.load(
            x_base + t_offs[:, None] * stride_xt + h_offs[None, :] * stride_xh,
            mask=t_mask[:, None] & h_mask[None, :],
            other=0.0,
        ).to(tl.float32)
        pooled = tl.sum(x * att[:, None], axis=0)
        tl.store(out_ptr + n * stride_on + h_offs * stride_oh, pooled, mask=h_mask)


def self_attention_pool(batch_rep: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Triton version of SelfAttentionPooling.forward for a (N, T, H) input; returns (N, H)."""
    assert batch_rep.dim() == 3, "expected (N, T, H)"
    N, T, H = batch_rep.shape
    w = weight.reshape(-1).contiguous()
    assert w.numel() == H
    b = bias.reshape(-1).contiguous()
    out = torch.empty((N, H), device=batch_rep.device, dtype=batch_rep.dtype)

    BLOCK_T = triton.next_power_of_2(T)
    assert BLOCK_T <= 1024, "sequence too long for a single-tile softmax"
    BLOCK_H = min(32, triton.next_power_of_2(H))
    attention_pool_kernel[(N,)](
        batch_rep,
        w,
        b,
        out,
        T,
        H,
        batch_rep.stride(0),
        batch_rep.stride(1),
        batch_rep.stride(2),
        out.stride(0),
        out.stride(1),
        BLOCK_T=BLOCK_T,
        BLOCK_H=BLOCK_H,
    )
    return out


class ModelNew(nn.Module):
    """SelfAttentionPooling with the scoring, softmax and weighted sum fused into one Triton kernel."""

    def __init__(self, input_dim: int) -> None:
        super().__init__()
        self.W = nn.Linear(input_dim, 1)

    def forward(self, batch_rep: torch.Tensor) -> torch.Tensor:
        if batch_rep.dim() == 2:
            # unbatched (T, H) input: tiny, keep the eager path
            att_w = torch.softmax(self.W(batch_rep).squeeze(-1), dim=-1).unsqueeze(-1)
            return torch.sum(batch_rep * att_w, dim=0)
        return self_attention_pool(batch_rep, self.W.weight, self.W.bias)
