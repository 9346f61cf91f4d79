import torch
import torch.nn as nn
import triton
import triton.language as tl


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


@triton.jit
def hardswish(x):
    # x * relu6(x + 3) / 6
    return x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0


@triton.jit
def conv2d_sub_hswish_igemm_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    N, C, H, W, OC, OH, OW,
    stride_xn, stride_xc, stride_xh, stride_xw,
    sub_value,
    KH: tl.constexpr, KW: tl.constexpr,
    SH: tl.constexpr, SW: tl.constexpr,
    PH: tl.constexpr, PW: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_R: tl.constexpr,
):
    """Implicit GEMM: [P = N*OH*OW, R = C*KH*KW] @ [R, OC] -> [P, OC]."""
    pid_p = tl.program_id(0)
    pid_oc = tl.program_id(1)

    P = N * OH * OW
    R = C * KH * KW

    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    p_mask = offs_p < P
    oc_mask = offs_oc < OC

    # output pixel -> (n, oh, ow)
    n_idx = offs_p // (OH * OW)
    pix = offs_p % (OH * OW)
    oh = pix // OW
    ow = pix % OW
    ih0 = oh * SH - PH
    iw0 = ow * SW - PW

    acc = tl.zeros((BLOCK_P, BLOCK_OC), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        offs_r = r0 + tl.arange(0, BLOCK_R)
        r_mask = offs_r < R
        # reduction index -> (ic, kh, kw), same order as weight.view(OC, -1)
        ic = offs_r // (KH * KW)
        kk = offs_r % (KH * KW)
        kh = kk // KW
        kw = kk % KW

        ih = ih0[:, None] + kh[None, :]
        iw = iw0[:, None] + kw[None, :]
        in_img = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a_mask = p_mask[:, None] & r_mask[None, :] & in_img
        a_ptrs = (x_ptr + n_idx[:, None] * stride_xn + ic[None, :] * stride_xc
                  + ih * stride_xh + iw * stride_xw)
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)

        # weight viewed as a row-major [OC, R] matrix, loaded transposed as [R, OC]
        b_ptrs = w_ptr + offs_oc[None, :] * R + offs_r[:, None]
        b = tl.load(b_ptrs, mask=r_mask[:, None] & oc_mask[None, :], other=0.0)

        acc += tl.dot(a, b)

    bias = tl.load(b_ptr + offs_oc, mask=oc_mask, other=0.0)
    acc = acc + bias[None, :]
    acc = hardswish(acc - sub_value)

    # scatter back to NCHW: y[n, oc, oh, ow]
    y_ptrs = y_ptr + (n_idx[:, None] * OC + offs_oc[None, :]) * (OH * OW) + pix[:, None]
    tl.store(y_ptrs, acc, mask=p_mask[:, None] & oc_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, subtract_value):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.subtract_value = subtract_value
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = _pair(padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C, H, W = x.shape
        KH, KW = self.kernel_size
        SH, SW = self.stride
        PH, PW = self.padding
        OC = self.conv.out_channels
        OH = (H + 2 * PH - KH) // SH + 1
        OW = (W + 2 * PW - KW) // SW + 1

        weight = self.conv.weight.contiguous()
        y = torch.empty((N, OC, OH, OW), device=x.device, dtype=x.dtype)

        BLOCK_P, BLOCK_OC, BLOCK_R = 32, 16, 16
        grid = (triton.cdiv(N * OH * OW, BLOCK_P), triton.cdiv(OC, BLOCK_OC))
        conv2d_sub_hswish_igemm_kernel[grid](
            x, weight, self.conv.bias, y,
            N, C, H, W, OC, OH, OW,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            float(self.subtract_value),
            KH=KH, KW=KW, SH=SH, SW=SW, PH=PH, PW=PW,
            BLOCK_P=BLOCK_P, BLOCK_OC=BLOCK_OC, BLOCK_R=BLOCK_R,
        )
        return y
