"""Triplet margin loss (p = 2) in Triton.

    d(x, y)  = || x - y + eps ||_2                    (eps = 1e-6, as in F.pairwise_distance)
    d_an     = swap ? <swapped negative distance> : d(a, n)
    loss_i   = max(margin + d(a_i, p_i) - d_an_i, 0)
    loss     = mean_i loss_i

Each program owns BLOCK_B triplets, streams the embedding dimension in BLOCK_D chunks and
atomically adds its partial sum of per-row losses to a single fp32 accumulator.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _pairwise_l2(x_ptr, y_ptr, rows, row_mask, stride_x, stride_y, D, eps,
                 BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    """L2 distance between rows of x and y, returned as a [BLOCK_B] fp32 vector."""
    acc = tl.zeros([BLOCK_B], dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = row_mask[:, None] & (cols < D)[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=m, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + rows[:, None] * stride_y + cols[None, :], mask=m, other=0.0).to(tl.float32)
        diff = tl.where(m, x - y + eps, 0.0)
        acc += tl.sum(diff * diff, axis=1)
    return tl.sqrt(acc)


@triton.jit
def triplet_margin_kernel(
    a_ptr, p_ptr, n_ptr, out_ptr,
    B, D,
    stride_a, stride_p, stride_n,
    margin, eps,
    SWAP: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_B + tl.arange(0, BLOCK_B)
    row_mask = rows < B

    d_ap = _pairwise_l2(a_ptr, p_ptr, rows, row_mask, stride_a, stride_p, D, eps, BLOCK_B, BLOCK_D)
    d_an = _pairwise_l2(a_ptr, n_ptr, rows, row_mask, stride_a, stride_n, D, eps, BLOCK_B, BLOCK_D)
    if SWAP:
        # distance swap: also consider the positive as the anchor of the negative pair
        d_pn = _pairwise_l2(p_ptr, n_ptr, rows, row_mask, stride_p, stride_n, D, eps, BLOCK_B, BLOCK_D)
        d_an = tl.minimum(d_an, d_pn)

    loss = tl.where(row_mask, tl.maximum(margin + d_ap - d_an, 0.0), 0.0)
    partial = tl.sum(loss, axis=0)
    tl.atomic_add(out_ptr, partial)


def triplet_margin_loss_triton(anchor, positive, negative, margin=1.0, swap=False, eps=1e-6):
    assert anchor.shape == positive.shape == negative.shape and anchor.dim() == 2
    anchor = anchor.contiguous()
    positive = positive.contiguous()
    negative = negative.contiguous()
    B, D = anchor.shape

    acc = torch.zeros(1, device=anchor.device, dtype=torch.float32)
    BLOCK_B = 8
    BLOCK_D = min(64, triton.next_power_of_2(D))
    grid = (triton.cdiv(B, BLOCK_B),)
    triplet_margin_kernel[grid](
        anchor, positive, negative, acc,
        B, D,
        anchor.stride(0), positive.stride(0), negative.stride(0),
        float(margin), float(eps),
        SWAP=bool(swap),
        BLOCK_B=BLOCK_B,
        BLOCK_D=BLOCK_D,
    )
    return (acc / B).squeeze(0).to(anchor.dtype)


class ModelNew(nn.Module):
    def __init__(self, margin: float = 1.0, swap: bool = False) -> None:
        super().__init__()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return triplet_margin_loss_triton(anchor, positive, negative, margin=self.margin, swap=self.swap)
