"""Triton version of a grouped Conv1d with reflect padding and a per-channel output scale.

The padding is never materialised: for every tap the kernel maps the (possibly out-of-range)
input position back into [0, L) the way ``F.pad(..., mode="reflect")`` does, so the input is
read in place through its strides.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _reflect_index(idx, L):
    """Mirror an index into [0, L) without repeating the edge sample (PyTorch 'reflect')."""
    idx = tl.where(idx < 0, -idx, idx)
    idx = tl.where(idx >= L, 2 * L - 1 - idx, idx)
    return idx


@triton.jit
def conv1d_reflect_grouped_kernel(
    x_ptr, w_ptr, b_ptr, s_ptr, y_ptr,
    C_OUT, L, L_OUT,
    stride_xb, stride_xc, stride_xl,
    stride_wo, stride_wi, stride_wk,
    stride_yb, stride_yc, stride_yl,
    CIN_PER_GROUP: tl.constexpr,
    COUT_PER_GROUP: tl.constexpr,
    GROUPS: tl.constexpr,
    KSIZE: tl.constexpr,
    PAD: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    pid_bc = tl.program_id(0)   # one (batch, out_channel) pair
    pid_l = tl.program_id(1)    # one tile of output positions

    b = pid_bc // C_OUT
    oc = pid_bc % C_OUT
    g = oc % GROUPS             # group this output channel belongs to
    ic0 = g * CIN_PER_GROUP

    offs_l = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    mask_l = offs_l < L_OUT

    acc = tl.zeros([BLOCK_L], dtype=tl.float32)
    x_base = x_ptr + b * stride_xb
    w_base = w_ptr + oc * stride_wo

    for ci in range(CIN_PER_GROUP):
        x_row = x_base + (ic0 + ci) * stride_xc
        for k in range(KSIZE):
            pos = offs_l + k - PAD
            pos = _reflect_index(pos, L)
            xv = tl.load(x_row + pos * stride_xl, mask=mask_l, other=0.0).to(tl.float32)
            wv = tl.load(w_base + ci * stride_wi + k * stride_wk).to(tl.float32)
            acc += xv * wv

    acc += tl.load(b_ptr + oc).to(tl.float32)
    acc *= tl.load(s_ptr + oc).to(tl.float32)

    y_ptrs = y_ptr + b * stride_yb + oc * stride_yc + offs_l * stride_yl
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_l)


def conv1d_reflect_grouped(x, weight, bias, scale, groups):
    B, C_in, L = x.shape
    C_out, cin_pg, K = weight.shape
    pad = K // 2
    assert C_in == cin_pg * groups and C_out % groups == 0
    assert pad < L, "reflect padding needs pad < length"
    L_out = L + 2 * pad - K + 1

    y = torch.empty((B, C_out, L_out), device=x.device, dtype=x.dtype)
    BLOCK_L = min(128, triton.next_power_of_2(L_out))
    grid = (B * C_out, triton.cdiv(L_out, BLOCK_L))
    conv1d_reflect_grouped_kernel[grid](
        x, weight, bias, scale, y,
        C_out, L, L_out,
        x.stride(0), x.stride(1), x.stride(2),
        weight.stride(0), weight.stride(1), weight.stride(2),
        y.stride(0), y.stride(1), y.stride(2),
        CIN_PER_GROUP=cin_pg,
        COUT_PER_GROUP=C_out // groups,
        GROUPS=groups,
        KSIZE=K,
        PAD=pad,
        BLOCK_L=BLOCK_L,
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, groups: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            in_channels, out_channels, kernel_size,
            padding=kernel_size // 2, padding_mode="reflect", groups=groups, bias=True,
        )
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, out_channels))
        self.groups = groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return conv1d_reflect_grouped(x, self.conv.weight, self.conv.bias, self.scale, self.groups)
