import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_fp16_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    stride_xm, stride_xn, stride_ym, stride_yn,
    N, eps,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym

    # mean and variance in fp32 (two passes over the row)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        s += tl.load(x_row + cols * stride_xn, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(s, axis=0) / N
    ss = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        ss += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(ss, axis=0) / N + eps)

    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)  # fp16 out, like the reference
        layernorm_fp16_kernel[(M,)](
            x, self.norm.weight, self.norm.bias, y,
            x.stride(0), x.stride(1), y.stride(0), y.stride(1),
            N, self.norm.eps,
            BLOCK_N=512,
        )
        return y
