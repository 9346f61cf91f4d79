import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_kernel(x_ptr, out_ptr, stride_xm, N, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + pid * stride_xm + offs, mask=offs < N, other=0.0)
    total = tl.sum(x, axis=0)
    tl.store(out_ptr + pid, total / BLOCK_N)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        out = torch.empty((M, 1), device=x.device, dtype=x.dtype)
        mean_kernel[(M,)](x, out, x.stride(0), N, BLOCK_N=triton.next_power_of_2(N))
        return out
