import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def maxpool1d_kernel(
    x_ptr, out_ptr, L, L_out,
    KSIZE: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    out_mask = offs < L_out
    acc = tl.full((BLOCK,), float("-inf"), tl.float32)
    for k in tl.static_range(KSIZE):
        idx = offs * STRIDE - PADDING + k
        valid = out_mask & (idx >= 0) & (idx < L)
        v = tl.load(x_ptr + row * L + idx, mask=valid, other=float("-inf"))
        acc = tl.maximum(acc, v)
    tl.store(out_ptr + row * L_out + offs, acc, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, L = x.shape
        L_out = (L + 2 * self.padding - self.kernel_size) // self.stride + 1
        out = torch.empty((N, C, L_out), device=x.device, dtype=x.dtype)
        BLOCK = triton.next_power_of_2(L_out)
        maxpool1d_kernel[(N * C,)](
            x, out, L, L_out, KSIZE=self.kernel_size, STRIDE=self.stride, PADDING=self.padding, BLOCK=BLOCK
        )
        return out
