"""Instance normalisation (affine) in Triton.

    y[n, c] = (x[n, c] - mean[n, c]) / sqrt(var[n, c] + eps) * weight[c] + bias[c]

The input is viewed as (N*C, H*W): one program per (n, c) plane. The plane is read twice, once for the
mean and once for the (biased) variance, then a third time to write the normalised output.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _plane_mean(row_ptr, HW, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, HW, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(row_ptr + offs, mask=offs < HW, other=0.0).to(tl.float32)
    return tl.sum(acc, axis=0) / HW


@triton.jit
def _plane_var(row_ptr, mean, HW, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, HW, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < HW
        v = tl.load(row_ptr + offs, mask=m, other=0.0).to(tl.float32)
        d = tl.where(m, v - mean, 0.0)
        acc += d * d
    return tl.sum(acc, axis=0) / HW


@triton.jit
def instance_norm_fwd_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    C, HW,
    eps,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)  # flattened (n, c)
    row_x = x_ptr + pid * HW
    row_y = y_ptr + pid * HW

    mean = _plane_mean(row_x, HW, BLOCK)
    var = _plane_var(row_x, mean, HW, BLOCK)
    rstd = 1.0 / tl.sqrt(var + eps)

    # per-channel affine parameters
    w = tl.load(w_ptr + pid % C).to(tl.float32)
    b = tl.load(b_ptr + pid % C).to(tl.float32)
    scale = rstd * w
    shift = b - mean * scale

    for start in range(0, HW, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < HW
        v = tl.load(row_x + offs, mask=m, other=0.0).to(tl.float32)
        out = v * scale + shift
        tl.store(row_y + offs, out.to(y_ptr.dtype.element_ty), mask=m)


def instance_norm_triton(x, weight=None, bias=None, eps=1e-5):
    """Affine instance norm over an (N, C, *spatial) tensor using batch statistics."""
    N, C = x.shape[0], x.shape[1]
    HW = x.numel() // (N * C)
    x2d = x.contiguous().view(N * C, HW)
    if weight is None:
        weight = torch.ones(C, device=x.device, dtype=x.dtype)
    if bias is None:
        bias = torch.zeros(C, device=x.device, dtype=x.dtype)

    y = torch.empty_like(x2d)
    BLOCK = min(1024, triton.next_power_of_2(HW))
    instance_norm_fwd_kernel[(N * C,)](
        x2d, weight.contiguous(), bias.contiguous(), y,
        C, HW,
        eps,
        BLOCK=BLOCK,
    )
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return instance_norm_triton(x, weight, bias, eps=self.eps)
