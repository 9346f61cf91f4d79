import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_relu(x, slope):
    return tl.where(x >= 0, x, x * slope)


@triton.jit
def grouped_conv2d_lrelu_kernel(
    inp_ptr, w_ptr, b_ptr, out_ptr,
    C_in, H, W, C_out, H_out, W_out,
    groups, cin_per_group, cout_per_group,
    negative_slope,
    STRIDE: tl.constexpr, PAD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
    BLOCK_CO: tl.constexpr, BLOCK_HW: tl.constexpr,
):
    # one program per (image, group): a [cout_per_group x H_out*W_out] tile of the output
    pid = tl.program_id(0)
    n = pid // groups
    g = pid % groups

    co_local = tl.arange(0, BLOCK_CO)
    co_mask = co_local < cout_per_group
    co = g * cout_per_group + co_local

    hw = tl.arange(0, BLOCK_HW)
    hw_mask = hw < H_out * W_out
    oh = hw // W_out
    ow = hw % W_out
    ih0 = oh * STRIDE - PAD
    iw0 = ow * STRIDE - PAD

    acc = tl.zeros((BLOCK_CO, BLOCK_HW), dtype=tl.float32)
    for ci in range(0, cin_per_group):
        x_base = inp_ptr + (n * C_in + g * cin_per_group + ci) * H * W
        w_base = w_ptr + (co * cin_per_group + ci) * (KH * KW)
        for kh in tl.static_range(KH):
            ih = ih0 + kh
            row_ok = hw_mask & (ih >= 0) & (ih < H)
            for kw in tl.static_range(KW):
                iw = iw0 + kw
                valid = row_ok & (iw >= 0) & (iw < H)
                x_val = tl.load(x_base + ih * W + iw, mask=valid, other=0.0)
                w_val = tl.load(w_base + kh * KW + kw, mask=co_mask, other=0.0)
                acc += w_val[:, None] * x_val[None, :]

    bias = tl.load(b_ptr + co, mask=co_mask, other=0.0)
    acc = _leaky_relu(acc + bias[:, None], negative_slope)

    out_offs = (n * C_out + co)[:, None] * (H_out * W_out) + hw[None, :]
    tl.store(out_ptr + out_offs, acc, mask=co_mask[:, None] & hw_mask[None, :])


def grouped_conv2d_lrelu(x, weight, bias, stride, padding, groups, negative_slope):
    x = x.contiguous()
    weight = weight.contiguous()
    N, C_in, H, W = x.shape
    C_out, cin_per_group, KH, KW = weight.shape
    assert C_in == cin_per_group * groups and C_out % groups == 0
    H_out = (H + 2 * padding - KH) // stride + 1
    W_out = (W + 2 * padding - KW) // stride + 1
    out = torch.empty((N, C_out, H_out, W_out), device=x.device, dtype=x.dtype)

    cout_per_group = C_out // groups
    BLOCK_CO = triton.next_power_of_2(cout_per_group)
    # the whole output plane in one tile (feature maps after the stem are small); cap the tile size
    BLOCK_HW = min(triton.next_power_of_2(H_out * W_out), 128)

    grid = (N * groups,)
    grouped_conv2d_lrelu_kernel[grid](
        x, weight, bias, out,
        C_in, H, W, C_out, H_out, W_out,
        groups, cin_per_group, cout_per_group,
        negative_slope,
        STRIDE=stride, PAD=padding, KH=KH, KW=KW,
        BLOCK_CO=BLOCK_CO, BLOCK_HW=BLOCK_HW,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, groups: int = 2, negative_slope: float = 0.1) -> None:
        super().__init__()
        # keep the nn.Conv2d only as the parameter container; the forward pass is the Triton kernel
        self.conv = nn.Conv2d(
            in_channels, out_channels, kernel_size=3, stride=2, padding=1, groups=groups, bias=True
        )
        self.groups = groups
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return grouped_conv2d_lrelu(
            x, self.conv.weight, self.conv.bias,
            self.conv.stride[0], self.conv.padding[0], self.groups, self.negative_slope,
        )
