import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def depthwise_conv2d_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    C, H, W,
    stride_xn, stride_xc, stride_xh, stride_xw,
    KS: tl.constexpr, PAD: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)  # one (n, c) plane per program
    n = pid // C
    c = pid % C
    offs = tl.arange(0, BLOCK)
    out_mask = offs < H * W
    oh = offs // W
    ow = offs % W
    x_base = x_ptr + n * stride_xn + c * stride_xc

    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for kh in tl.static_range(KS):
        for kw in tl.static_range(KS):
            ih = oh + kh - PAD
            iw = ow + kw - PAD
            m = out_mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            xv = tl.load(x_base + ih * stride_xh + iw * stride_xw, mask=m, other=0.0)
            # convolution: the filter is applied flipped
            wv = tl.load(w_ptr + c * KS * KS + (KS - 1 - kh) * KS + (KS - 1 - kw))
            acc += xv * wv
    acc += tl.load(b_ptr + c)
    tl.store(y_ptr + pid * H * W + offs, acc, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1, groups=channels, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C, H, W = x.shape
        y = torch.empty((N, C, H, W), device=x.device, dtype=x.dtype)
        weight = self.conv.weight.contiguous()
        depthwise_conv2d_kernel[(N * C,)](
            x, weight, self.conv.bias, y,
            C, H, W,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            KS=3, PAD=1, BLOCK=triton.next_power_of_2(H * W),
        )
        return y
