import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _tap_coords(oh, ow, kh, kw, stride, padding, dilation):
    # input coordinates touched by tap (kh, kw) for output pixel (oh, ow)
    ih = oh * stride - padding + kh * dilation
    iw = ow * stride - padding + kw * dilation
    return ih, iw


@triton.jit
def depthwise_conv2d_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    C, H, W, OH, OW,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride, padding, dilation,
    KSIZE: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr,
):
    pid_nc, pid_s = tl.program_id(0), tl.program_id(1)   # (batch*channel plane, spatial block)
    n, c = pid_nc // C, pid_nc % C

    offs = pid_s * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OH * OW
    oh, ow = offs // OW, offs % OW

    x_plane = x_ptr + n * stride_xn + c * stride_xc
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for kh in tl.static_range(KSIZE):
        for kw in tl.static_range(KSIZE):
            ih, iw = _tap_coords(oh, ow, kh, kw, stride, padding, dilation)
            inb = valid & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            xv = tl.load(x_plane + ih * stride_xh + iw * stride_xw, mask=inb, other=0.0)
            wv = tl.load(w_ptr + c * KSIZE * KSIZE + kh * KSIZE + kw)   # depthwise weight is (C, 1, K, K)
            acc += xv.to(tl.float32) * wv.to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + pid_nc).to(tl.float32)
    # intermediate is a fresh contiguous (N, C, OH, OW) buffer
    tl.store(out_ptr + pid_nc * OH * OW + offs, acc, mask=valid)


@triton.jit
def pointwise_conv_kernel(
    t_ptr, w_ptr, b_ptr, y_ptr,
    C_in, C_out, P, num_p_blocks,
    HAS_BIAS: tl.constexpr,
    BLOCK_CO: tl.constexpr, BLOCK_CI: tl.constexpr, BLOCK_P: tl.constexpr,
):
    pid0, pid_co = tl.program_id(0), tl.program_id(1)
    n, pid_p = pid0 // num_p_blocks, pid0 % num_p_blocks

    offs_co = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    co_ok, p_ok = offs_co < C_out, offs_p < P

    acc = tl.zeros([BLOCK_CO, BLOCK_P], dtype=tl.float32)
    t_batch = t_ptr + n * C_in * P
    # reduce over input channels, BLOCK_CI at a time
    for k0 in range(0, C_in, BLOCK_CI):
        offs_ci = k0 + tl.arange(0, BLOCK_CI)
        # pointwise weight (C_out, C_in, 1, 1) -> row-major [C_out, C_in]
        w_tile = tl.load(w_ptr + offs_co[:, None] * C_in + offs_ci[None, :],
                         mask=co_ok[:, None], other=0.0)
        t_tile = tl.load(t_batch + offs_ci[:, None] * P + offs_p[None, :],
                         mask=p_ok[None, :], other=0.0)
        prod = w_tile.to(tl.float32)[:, :, None] * t_tile.to(tl.float32)[None, :, :]
        acc += tl.sum(prod, axis=1)

    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_co, mask=co_ok, other=0.0).to(tl.float32)[:, None]

    y_ptrs = y_ptr + n * C_out * P + offs_co[:, None] * P + offs_p[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=co_ok[:, None] & p_ok[None, :])


def _as_int(v):  # square kernels / strides only
    return v[0] if isinstance(v, (tuple, list)) else int(v)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, bias=False):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                   dilation=dilation, groups=in_channels, bias=bias)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)
        self.k, self.stride = _as_int(kernel_size), _as_int(stride)
        self.padding, self.dilation = _as_int(padding), _as_int(dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        (N, C, H, W), k, s, p, d = x.shape, self.k, self.stride, self.padding, self.dilation
        OH = (H + 2 * p - d * (k - 1) - 1) // s + 1
        OW = (W + 2 * p - d * (k - 1) - 1) // s + 1
        P = OH * OW
        dw_w, dw_b = self.depthwise.weight.contiguous(), self.depthwise.bias
        mid = torch.empty((N, C, OH, OW), device=x.device, dtype=torch.float32)

        grid_dw = lambda meta: (N * C, triton.cdiv(P, meta["BLOCK"]))
        depthwise_conv2d_kernel[grid_dw](
            x, dw_w, dw_b if dw_b is not None else dw_w, mid,
            C, H, W, OH, OW,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            s, p, d,
            KSIZE=k, HAS_BIAS=dw_b is not None, BLOCK=min(triton.next_power_of_2(P), 256),
        )

        C_out = self.pointwise.out_channels
        pw_w, pw_b = self.pointwise.weight.reshape(C_out, C).contiguous(), self.pointwise.bias
        y = torch.empty((N, C_out, OH, OW), device=x.device, dtype=x.dtype)
        BLOCK_P = min(triton.next_power_of_2(P), 64)
        BLOCK_CO = min(triton.next_power_of_2(C_out), 32)
        BLOCK_CI = min(triton.next_power_of_2(C), 16)
        num_p_blocks = triton.cdiv(P, BLOCK_P)
        grid_pw = (N * num_p_blocks, triton.cdiv(C_out, BLOCK_CO))
        pointwise_conv_kernel[grid_pw](
            mid, pw_w, pw_b if pw_b is not None else pw_w, y,
            C, C_out, P, num_p_blocks,
            HAS_BIAS=pw_b is not None,
            BLOCK_CO=BLOCK_CO, BLOCK_CI=BLOCK_CI, BLOCK_P=BLOCK_P,
        )
        return y
