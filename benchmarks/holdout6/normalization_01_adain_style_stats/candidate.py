"""AdaIN (adaptive instance normalization) in Triton.

Two launches:
  1. ``_plane_stats_kernel`` computes, for every (batch, channel) plane of a feature map, the mean and the
     standard deviation ``sqrt(var + eps)`` over the spatial positions. It is launched once for the content
     features and once for the style features (their spatial sizes may differ).
  2. ``_adain_apply_kernel`` whitens every content plane with its own statistics and re-colours it with the
     matching style statistics: ``(x - mu_c) / sigma_c * sigma_s + mu_s``.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _plane_stats_kernel(
    feat_ptr,  # *fp32, [N * C, HW] contiguous
    mean_ptr,  # *fp32, [N * C]
    std_ptr,  # *fp32, [N * C]
    HW,  # spatial positions per plane
    eps,  # added to the variance before the square root
    BLOCK_HW: tl.constexpr,
):
    """One program per (n, c) plane. Two sweeps over the plane: the mean first, then the centred second
    moment (more stable than E[x^2] - E[x]^2 when the mean is large)."""
    plane = tl.program_id(0)
    plane_ptr = feat_ptr + plane * HW

    # ---- sweep 1: mean ---------------------------------------------------------------------------
    running = tl.zeros([BLOCK_HW], dtype=tl.float32)
    for start in range(0, HW, BLOCK_HW):
        offs = start + tl.arange(0, BLOCK_HW)
        valid = offs < HW
        running += tl.load(plane_ptr + offs, mask=valid, other=0.0).to(tl.float32)
    mean = tl.sum(running, axis=0) / HW

    # ---- sweep 2: variance -----------------------------------------------------------------------
    running_sq = tl.zeros([BLOCK_HW], dtype=tl.float32)
    for start in range(0, HW, BLOCK_HW):
        offs = start + tl.arange(0, BLOCK_HW)
        valid = offs < HW
        vals = tl.load(plane_ptr + offs, mask=valid, other=0.0).to(tl.float32)
        centred = tl.where(valid, vals - mean, 0.0)
        running_sq += centred * centred
    var = tl.sum(running_sq, axis=0) / HW

    tl.store(mean_ptr + plane, mean)
    tl.store(std_ptr + plane, tl.sqrt(var + eps))


@triton.jit
def _adain_apply_kernel(
    content_ptr,
    out_ptr,
    c_mean_ptr,
    c_std_ptr,
    s_mean_ptr,
    s_std_ptr,
    HW,
    BLOCK_HW: tl.constexpr,
):
    """Grid (N * C, cdiv(HW, BLOCK_HW)): each program re-colours one BLOCK_HW chunk of one plane."""
    plane = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * BLOCK_HW + tl.arange(0, BLOCK_HW)
    valid = offs < HW

    mu_c = tl.load(c_mean_ptr + plane)
    sigma_c = tl.load(c_std_ptr + plane)
    mu_s = tl.load(s_mean_ptr + plane)
    sigma_s = tl.load(s_std_ptr + plane)

    x = tl.load(content_ptr + plane * HW + offs, mask=valid, other=0.0).to(tl.float32)
    y = (x - mu_c) / sigma_c * sigma_s + mu_s
    tl.store(out_ptr + plane * HW + offs, y, mask=valid)


def _plane_stats(feat: torch.Tensor, eps: float, block_hw: int = 256):
    """Per-plane (mean, std) of a contiguous [N, C, H, W] tensor, each returned as a flat [N * C] tensor."""
    n, c, h, w = feat.shape
    planes, hw = n * c, h * w
    mean = torch.empty(planes, device=feat.device, dtype=torch.float32)
    std = torch.empty(planes, device=feat.device, dtype=torch.float32)
    block = min(block_hw, triton.next_power_of_2(hw))
    _plane_stats_kernel[(planes,)](feat, mean, std, hw, eps, BLOCK_HW=block)
    return mean, std


def adaptive_instance_norm(content: torch.Tensor, style: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """AdaIN(content, style) = sigma(style) * (content - mu(content)) / sigma(content) + mu(style)."""
    assert content.dim() == 4 and style.dim() == 4, "expected [N, C, H, W] feature maps"
    assert content.shape[:2] == style.shape[:2], "content and style must agree on batch and channels"
    content = content.contiguous()
    style = style.contiguous()

    c_mean, c_std = _plane_stats(content, eps)
    s_mean, s_std = _plane_stats(style, eps)

    n, c, h, w = content.shape
    hw = h * w
    out = torch.empty_like(content)
    BLOCK_HW = 256
    grid = (n * c, triton.cdiv(hw, BLOCK_HW))
    _adain_apply_kernel[grid](content, out, c_mean, c_std, s_mean, s_std, hw, BLOCK_HW=BLOCK_HW)
    return out


class ModelNew(nn.Module):
    """Drop-in replacement for the AdaIN layer, backed by the two Triton kernels above."""

    def __init__(self, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, content_feat: torch.Tensor, style_feat: torch.Tensor) -> torch.Tensor:
        return adaptive_instance_norm(content_feat, style_feat, self.eps)
