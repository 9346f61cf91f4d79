import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _celu(x, alpha):
    # CELU(x) = max(0, x) + min(0, alpha * (exp(x) - 1))
    return tl.maximum(x, 0.0) + tl.minimum(0.0, alpha * (tl.exp(x) - 1.0))


@triton.jit
def celu_bias_scale_kernel(
    y_ptr,            # conv output, contiguous [B, C, H, W], processed flat
    bias_ptr,         # [C]
    out_ptr,
    n_elements, C, HW,
    alpha, scale,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements

    # NCHW: channel of a flat index
    ch = (offs // HW) % C
    b = tl.load(bias_ptr + ch, mask=mask, other=0.0)

    v = tl.load(y_ptr + offs, mask=mask, other=0.0)
    v = _celu(v, alpha)
    v = (v + b) * scale
    tl.store(out_ptr + offs, v, mask=mask)


def celu_bias_scale(y, bias, alpha, scale):
    y = y.contiguous()
    B, C, H, W = y.shape
    n_elements = y.numel()
    out = torch.empty_like(y)
    BLOCK_SIZE = 1024
    # one program per BLOCK_SIZE chunk of the flattened tensor
    grid = (n_elements // BLOCK_SIZE,)
    celu_bias_scale_kernel[grid](
        y, bias.reshape(-1), out,
        n_elements, C, H * W,
        float(alpha), float(scale),
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, alpha, bias_shape, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.alpha = alpha
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        y = self.conv(x)  # keep cuDNN conv, fuse the epilogue in Triton
        return celu_bias_scale(y, self.bias, self.alpha, self.scaling_factor)
