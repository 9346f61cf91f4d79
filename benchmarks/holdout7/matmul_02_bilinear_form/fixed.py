"""Bilinear layer (``F.bilinear``) in Triton.

For every output feature ``o`` the bilinear form x1^T W[o] x2 is computed for a block of batch rows as

    T = x1_block @ W[o]          # [BLOCK_B, IN2], accumulated over IN1 in chunks of BLOCK_I (tl.dot)
    out[b, o] = sum_j T[b, j] * x2[b, j] + bias[o]

so each program owns (a block of batch rows, one output feature).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bilinear_kernel(
    x1_ptr, x2_ptr, w_ptr, b_ptr, out_ptr,
    B, IN1, IN2,
    stride_x1b, stride_x1i,
    stride_x2b, stride_x2j,
    stride_wo, stride_wi, stride_wj,
    stride_ob, stride_oo,
    HAS_BIAS: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_J: tl.constexpr,
):
    pid_b = tl.program_id(0)
    o = tl.program_id(1)

    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    offs_j = tl.arange(0, BLOCK_J)
    mask_b = offs_b < B
    mask_j = offs_j < IN2

    # T = x1[rows] @ W[o]  -> [BLOCK_B, BLOCK_J]
    t = tl.zeros((BLOCK_B, BLOCK_J), dtype=tl.float32)
    w_base = w_ptr + o * stride_wo
    for i0 in range(0, IN1, BLOCK_I):
        offs_i = i0 + tl.arange(0, BLOCK_I)
        mask_i = offs_i < IN1
        x1 = tl.load(x1_ptr + offs_b[:, None] * stride_x1b + offs_i[None, :] * stride_x1i,
                     mask=mask_b[:, None] & mask_i[None, :], other=0.0)
        w = tl.load(w_base + offs_i[:, None] * stride_wi + offs_j[None, :] * stride_wj,
                    mask=mask_i[:, None] & mask_j[None, :], other=0.0)
        t += tl.dot(x1, w)

    x2 = tl.load(x2_ptr + offs_b[:, None] * stride_x2b + offs_j[None, :] * stride_x2j,
                 mask=mask_b[:, None] & mask_j[None, :], other=0.0)
    acc = tl.sum(t * x2.to(tl.float32), axis=1)

    if HAS_BIAS:
        acc += tl.load(b_ptr + o).to(tl.float32)

    tl.store(out_ptr + offs_b * stride_ob + o * stride_oo, acc.to(out_ptr.dtype.element_ty), mask=mask_b)


def triton_bilinear(x1: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor, bias=None) -> torch.Tensor:
    """x1: (..., IN1), x2: (..., IN2), weight: (OUT, IN1, IN2), bias: (OUT,) or None -> (..., OUT)."""
    lead = x1.shape[:-1]
    IN1, IN2 = x1.shape[-1], x2.shape[-1]
    OUT = weight.shape[0]
    x1_2d = x1.reshape(-1, IN1)
    x2_2d = x2.reshape(-1, IN2)
    if bias is not None:
        bias = bias.contiguous()
    B = x1_2d.shape[0]

    out = torch.empty((B, OUT), device=x1.device, dtype=x1.dtype)

    BLOCK_B = 16
    BLOCK_I = 16
    BLOCK_J = max(16, triton.next_power_of_2(IN2))

    grid = (triton.cdiv(B, BLOCK_B), OUT)
    bilinear_kernel[grid](
        x1_2d, x2_2d, weight, bias if bias is not None else out, out,
        B, IN1, IN2,
        x1_2d.stride(0), x1_2d.stride(1),
        x2_2d.stride(0), x2_2d.stride(1),
        weight.stride(0), weight.stride(1), weight.stride(2),
        out.stride(0), out.stride(1),
        HAS_BIAS=bias is not None,
        BLOCK_B=BLOCK_B,
        BLOCK_I=BLOCK_I,
        BLOCK_J=BLOCK_J,
    )
    return out.reshape(*lead, OUT)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return triton_bilinear(x1, x2, weight, bias)
