import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _source_index(out_pos, tap, pad, stride, L_in):
    """Input position feeding output `out_pos` through kernel tap `tap`, and whether it exists.

    For a transposed convolution out = in * stride - pad + tap, so in = (out + pad - tap) / stride,
    valid only when the division is exact and the result lies inside the input.
    """
    num = out_pos + pad - tap
    src = num // stride
    valid = (num >= 0) & ((num % stride) == 0) & (src < L_in)
    return src, valid


@triton.jit
def conv_transpose1d_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr,
    C_in, C_out, L_in, L_out,
    pad, stride,
    KSIZE: tl.constexpr,
    BLOCK_CI: tl.constexpr,
    BLOCK_CO: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    batch = tl.program_id(0)
    block_l = tl.program_id(1)

    co = tl.arange(0, BLOCK_CO)
    lo = block_l * BLOCK_L + tl.arange(0, BLOCK_L)
    co_mask = co < C_out
    lo_mask = lo < L_out

    ci = tl.arange(0, BLOCK_CI)
    ci_mask = ci < C_in

    acc = tl.zeros((BLOCK_CO, BLOCK_L), dtype=tl.float32)
    x_rows = x_ptr + batch * C_in * L_in + ci[:, None] * L_in  # [BLOCK_CI, 1]
    for t in tl.static_range(KSIZE):
        src, valid = _source_index(lo, t, pad, stride, L_in)
        # all input channels at once: [BLOCK_CI, BLOCK_L]
        xv = tl.load(x_rows + src[None, :], mask=ci_mask[:, None] & (lo_mask & valid)[None, :], other=0.0)
        # ConvTranspose1d weight layout: (C_in, C_out, K) -> [BLOCK_CI, BLOCK_CO]
        wv = tl.load(w_ptr + (ci[:, None] * C_out + co[None, :]) * KSIZE + t,
                     mask=ci_mask[:, None] & co_mask[None, :], other=0.0)
        acc += tl.sum(wv[:, :, None] * xv[:, None, :], axis=0)

    bias = tl.load(bias_ptr + co, mask=co_mask, other=0.0)
    acc = acc + bias[:, None]

    y_ptrs = y_ptr + batch * C_out * L_out + co[:, None] * L_out + lo[None, :]
    tl.store(y_ptrs, acc, mask=co_mask[:, None] & lo_mask[None, :])


def conv_transpose1d_triton(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int, padding: int) -> torch.Tensor:
    assert x.dim() == 3, "expected (N, C_in, L)"
    assert weight.shape[0] == x.shape[1], "weight must be (C_in, C_out, K)"
    x = x.contiguous()
    weight = weight.contiguous()
    N, C_in, L_in = x.shape
    _, C_out, K = weight.shape

    L_out = (L_in - 1) * stride - 2 * padding + K
    y = torch.empty((N, C_out, L_out), device=x.device, dtype=x.dtype)

    BLOCK_CI = triton.next_power_of_2(C_in)
    BLOCK_CO = triton.next_power_of_2(C_out)
    BLOCK_L = min(triton.next_power_of_2(L_out), 128)
    grid = (N, triton.cdiv(L_out, BLOCK_L))
    conv_transpose1d_kernel[grid](
        x, weight, bias, y,
        C_in, C_out, L_in, L_out,
        padding, stride,
        KSIZE=K, BLOCK_CI=BLOCK_CI, BLOCK_CO=BLOCK_CO, BLOCK_L=BLOCK_L,
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.deconv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return conv_transpose1d_triton(x, self.deconv.weight, self.deconv.bias, self.stride, self.padding)
