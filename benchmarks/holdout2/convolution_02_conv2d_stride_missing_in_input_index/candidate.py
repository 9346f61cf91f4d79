import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    C_in, C_out, OH, OW,
    stride_xn, stride_xc, stride_xh, stride_xw,
    STRIDE: tl.constexpr, KSIZE: tl.constexpr, BLOCK: tl.constexpr,
):
    pid_nc = tl.program_id(0)
    pid_p = tl.program_id(1)
    n = pid_nc // C_out
    co = pid_nc % C_out
    offs = pid_p * BLOCK + tl.arange(0, BLOCK)
    mask = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for ci in range(0, C_in):
        for kh in tl.static_range(KSIZE):
            for kw in tl.static_range(KSIZE):
                ih = oh + kh
                iw = ow + kw
                xv = tl.load(
                    x_ptr + n * stride_xn + ci * stride_xc + ih * stride_xh + iw * stride_xw,
                    mask=mask, other=0.0,
                )
                wv = tl.load(w_ptr + ((co * C_in + ci) * KSIZE + kh) * KSIZE + kw)
                acc += xv * wv
    acc += tl.load(b_ptr + co)
    tl.store(out_ptr + pid_nc * OH * OW + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C_in, H, W = x.shape
        w = self.conv.weight.contiguous()
        C_out, K = w.shape[0], w.shape[2]
        s = self.conv.stride[0]
        OH = (H - K) // s + 1
        OW = (W - K) // s + 1
        out = torch.empty((N, C_out, OH, OW), device=x.device, dtype=x.dtype)
        BLOCK = 128
        grid = (N * C_out, triton.cdiv(OH * OW, BLOCK))
        conv2d_kernel[grid](
            x, w, self.conv.bias, out, C_in, C_out, OH, OW,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            STRIDE=s, KSIZE=K, BLOCK=BLOCK,
        )
        return out
