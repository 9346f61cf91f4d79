"""Triton kernel for ``torch.var_mean`` reducing the middle axis of a (B, L, D) tensor.

Each program owns one batch entry and a block of BLOCK_D feature columns and walks down the L axis twice:
the first pass accumulates the sum (mean), the second the centred sum of squares (variance). The two-pass
form avoids the cancellation of the E[x^2] - E[x]^2 shortcut.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _var_mean_dim1_kernel(
    x_ptr, var_ptr, mean_ptr,
    L, D,
    denom,
    BLOCK_L: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_d = tl.program_id(1)

    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    d_mask = offs_d < D
    base = x_ptr + pid_b * L * D

    # ---- pass 1: mean over L ----
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):
        offs_l = l0 + tl.arange(0, BLOCK_L)
        mask = (offs_l[:, None] < L) & d_mask[None, :]
        ptrs = base + offs_l[:, None] * D + offs_d[None, :]
        x = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
        acc += tl.sum(x, axis=0)
    mean = acc / L

    # ---- pass 2: centred sum of squares ----
    m2 = tl.zeros([BLOCK_D], dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):
        offs_l = l0 + tl.arange(0, BLOCK_L)
        mask = (offs_l[:, None] < L) & d_mask[None, :]
        ptrs = base + offs_l[:, None] * D + offs_d[None, :]
        x = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
        diff = tl.where(mask, x - mean[None, :], 0.0)
        m2 += tl.sum(diff * diff, axis=0)
    var = m2 / denom

    out_offs = pid_b * D + offs_d
    tl.store(mean_ptr + out_offs, mean, mask=d_mask)
    tl.store(var_ptr + out_offs, var, mask=d_mask)


def triton_var_mean(x: torch.Tensor, dim: int = 1, correction: int = 1, keepdim: bool = False):
    """var_mean over ``dim`` of a 3-D tensor (only the middle axis goes through Triton)."""
    if x.dim() != 3 or dim % 3 != 1:
        # not needed for this problem: keep the semantics for other layouts
        return torch.var_mean(x, dim=dim, correction=correction, keepdim=keepdim)

    x = x.contiguous()
    B, L, D = x.shape
    # Bessel's correction: divide by L - 1 when a correction is requested
    unbiased = bool(correction)
    denom = float(L - correction)

    var = torch.empty((B, D), device=x.device, dtype=torch.float32)
    mean = torch.empty((B, D), device=x.device, dtype=torch.float32)

    BLOCK_L = 16
    BLOCK_D = min(64, triton.next_power_of_2(D))
    grid = (B, triton.cdiv(D, BLOCK_D))
    _var_mean_dim1_kernel[grid](
        x, var, mean,
        L, D,
        denom,
        BLOCK_L=BLOCK_L,
        BLOCK_D=BLOCK_D,
    )

    var = var.to(x.dtype)
    mean = mean.to(x.dtype)
    if keepdim:
        var = var.unsqueeze(1)
        mean = mean.unsqueeze(1)
    return var, mean


class ModelNew(nn.Module):
    def __init__(self, dim: int = -1, correction: int = 1, keepdim: bool = False) -> None:
        super().__init__()
        self.dim = dim
        self.correction = correction
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor):
        return triton_var_mean(x, dim=self.dim, correction=self.correction, keepdim=self.keepdim)
