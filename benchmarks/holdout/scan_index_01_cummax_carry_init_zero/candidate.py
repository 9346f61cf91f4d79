import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def cummax_kernel(x_ptr, y_ptr, L, stride_xm, stride_xl, stride_ym, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    carry = tl.zeros([1], dtype=tl.float32)  # running max of the chunks already done
    for start in range(0, L, BLOCK):
        cols = start + offs
        mask = cols < L
        x = tl.load(x_ptr + row * stride_xm + cols * stride_xl, mask=mask, other=float("-inf"))
        x = x.to(tl.float32)
        run = tl.associative_scan(x, 0, _max_combine)
        run = tl.maximum(run, carry)
        tl.store(y_ptr + row * stride_ym + cols, run, mask=mask)
        carry = tl.maximum(carry, tl.max(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, L = x.shape
        y = torch.empty((M, L), device=x.device, dtype=x.dtype)
        cummax_kernel[(M,)](x, y, L, x.stride(0), x.stride(1), y.stride(0), BLOCK=32)
        return y
