import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_transpose1d_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    C_in, C_out, L_in, L_out,
    stride_xn, stride_xc, stride_xl,
    STRIDE: tl.constexpr, PADDING: tl.constexpr, KSIZE: tl.constexpr, BLOCK_L: tl.constexpr,
):
    pid_nc = tl.program_id(0)
    pid_l = tl.program_id(1)
    n = pid_nc // C_out
    co = pid_nc % C_out
    t = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    t_mask = t < L_out
    acc = tl.zeros((BLOCK_L,), dtype=tl.float32)
    for ci in range(0, C_in):
        for k in tl.static_range(KSIZE):
            # out[t] receives x[i] * w[k] where t = i * STRIDE - PADDING + k
            num = t + PADDING - k
            i = num // STRIDE
            valid = t_mask & (num >= 0) & (num % STRIDE == 0) & (i < L_in)
            xv = tl.load(x_ptr + n * stride_xn + ci * stride_xc + i * stride_xl, mask=valid, other=0.0)
            wv = tl.load(w_ptr + (ci * C_out + co) * KSIZE + k)
            acc += xv * wv
    acc += tl.load(b_ptr + co)
    tl.store(out_ptr + pid_nc * L_out + t, acc, mask=t_mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.deconv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C_in, L_in = x.shape
        w = self.deconv.weight.contiguous()
        C_out, K = w.shape[1], w.shape[2]
        stride, padding = self.deconv.stride[0], self.deconv.padding[0]
        L_out = (L_in - 1) * stride - 2 * padding + K
        out = torch.empty((N, C_out, L_out), device=x.device, dtype=x.dtype)
        BLOCK_L = 64
        grid = (N * C_out, triton.cdiv(L_out, BLOCK_L))
        conv_transpose1d_kernel[grid](
            x, w, self.deconv.bias, out, C_in, C_out, L_in, L_out,
            x.stride(0), x.stride(1), x.stride(2),
            STRIDE=stride, PADDING=padding, KSIZE=K, BLOCK_L=BLOCK_L,
        )
        return out
