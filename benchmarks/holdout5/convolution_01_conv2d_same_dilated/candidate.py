import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _conv2d_same_k(x, w, b, y, C, H, W, O, K: tl.constexpr, D: tl.constexpr, PAD: tl.constexpr,
                   BO: tl.constexpr, BC: tl.constexpr, BP: tl.constexpr):
    # one program = one image x BP output pixels x all output channels
    n = tl.program_id(0)
    pb = tl.program_id(1)
    oc = tl.arange(0, BO)
    ic = tl.arange(0, BC)
    p = pb * BP + tl.arange(0, BP)
    om = oc < O
    cm = ic < C
    pm = p < H * W
    oh = p // W
    ow = p % W
    xb = x + n * C * H * W + ic[:, None] * H * W
    acc = tl.zeros((BO, BP), dtype=tl.float32)
    for kh in tl.static_range(K):
        ih = oh + kh * D - PAD
        for kw in tl.static_range(K):
            iw = ow + kw * D - PAD
            m = pm & (ih >= 0) & (ih < W) & (iw >= 0) & (iw < W)
            xv = tl.load(xb + (ih * W + iw)[None, :], mask=cm[:, None] & m[None, :], other=0.0)  # [BC, BP]
            wv = tl.load(w + ((oc[:, None] * C + ic[None, :]) * K + kh) * K + kw,
                         mask=om[:, None] & cm[None, :], other=0.0)  # [BO, BC]
            acc += tl.sum(wv[:, :, None] * xv[None, :, :], axis=1)
    acc += tl.load(b + oc, mask=om, other=0.0)[:, None]
    tl.store(y + (n * O + oc[:, None]) * H * W + p[None, :], acc, mask=om[:, None] & pm[None, :])


def conv2d_same(x, w, b, d):
    x = x.contiguous()
    N, C, H, W = x.shape
    O, _, K, _ = w.shape
    pad = d * (K - 1) // 2  # odd K: symmetric
    y = torch.empty((N, O, H, W), device=x.device, dtype=x.dtype)
    BO = triton.next_power_of_2(O)
    BC = triton.next_power_of_2(C)
    BP = min(triton.next_power_of_2(H * W), 512)
    grid = (N, triton.cdiv(H * W, BP))
    _conv2d_same_k[grid](x, w, b, y, C, H, W, O, K=K, D=d, PAD=pad, BO=BO, BC=BC, BP=BP)
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, dilation):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding="same", dilation=dilation)
        self.d = dilation

    def forward(self, x):
        return conv2d_same(x, self.conv.weight, self.conv.bias, self.d)
