import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pool2d_kernel(x_ptr, y_ptr, C, H, W, H_out, W_out, sxn, sxc, sxh, sxw,
                  KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # one (n, c) plane per program
    n = pid // C
    c = pid % C
    offs = tl.arange(0, BLOCK)
    omask = offs < H_out * W_out
    oh = offs // W_out
    ow = offs % W_out
    base = x_ptr + n * sxn + c * sxc
    total = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for kh in tl.static_range(KS):
        for kw in tl.static_range(KS):
            ih = oh * STRIDE - PAD + kh
            iw = ow * STRIDE - PAD + kw
            m = omask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            total += tl.load(base + ih * sxh + iw * sxw, mask=m, other=0.0)
            count += m.to(tl.float32)
    # count_include_pad=False: average over the taps inside the image
    out = total / tl.maximum(count, 1.0)
    tl.store(y_ptr + pid * H_out * W_out + offs, out, mask=omask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C, H, W = x.shape
        ks, stride, pad = 3, 1, 1
        H_out = (H + 2 * pad - ks) // stride + 1
        W_out = (W + 2 * pad - ks) // stride + 1
        y = torch.empty((N, C, H_out, W_out), device=x.device, dtype=x.dtype)
        pool2d_kernel[(N * C,)](
            x, y, C, H, W, H_out, W_out,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            KS=ks, STRIDE=stride, PAD=pad, BLOCK=triton.next_power_of_2(H_out * W_out),
        )
        return y
