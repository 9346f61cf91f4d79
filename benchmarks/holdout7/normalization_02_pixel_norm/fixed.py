"""PixelNorm in Triton.

The reduction runs over the channel axis of an NCHW tensor, i.e. across elements HW apart in memory. Each
program loads a [BLOCK_C, BLOCK_HW] tile (all channels of BLOCK_HW pixels of one image), so the per-pixel
mean of squares is a single ``tl.sum`` over axis 0 and every pixel is read from memory exactly once.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pixel_norm_kernel(
    x_ptr, y_ptr,
    C, HW,
    stride_n, stride_c,
    epsilon,
    BLOCK_C: tl.constexpr,
    BLOCK_HW: tl.constexpr,
):
    pid_n = tl.program_id(0)
    pid_hw = tl.program_id(1)

    offs_c = tl.arange(0, BLOCK_C)
    offs_hw = pid_hw * BLOCK_HW + tl.arange(0, BLOCK_HW)
    c_mask = offs_c < C
    hw_mask = offs_hw < HW
    mask = c_mask[:, None] & hw_mask[None, :]

    offsets = pid_n * stride_n + offs_c[:, None] * stride_c + offs_hw[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)

    # mean of squares over channels, one value per pixel
    ms = tl.sum(x * x, axis=0) / C
    inv = 1.0 / tl.sqrt(ms + epsilon)
    y = x * inv[None, :]

    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def pixel_norm(x: torch.Tensor, epsilon: float = 1e-8) -> torch.Tensor:
    """x / sqrt(mean(x^2, dim=1) + epsilon) for an (N, C, H, W) tensor."""
    assert x.dim() == 4, "expected NCHW input"
    x = x.contiguous()
    N, C, H, W = x.shape
    HW = H * W
    y = torch.empty_like(x)

    BLOCK_C = triton.next_power_of_2(C)
    # keep the tile around 4K elements
    BLOCK_HW = max(16, min(triton.next_power_of_2(HW), 4096 // BLOCK_C))
    grid = (N, triton.cdiv(HW, BLOCK_HW))
    pixel_norm_kernel[grid](
        x, y,
        C, HW,
        x.stride(0), x.stride(1),
        epsilon,
        BLOCK_C=BLOCK_C,
        BLOCK_HW=BLOCK_HW,
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, epsilon: float = 1e-8) -> None:
        super().__init__()
        self.epsilon = epsilon

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return pixel_norm(x, self.epsilon)
