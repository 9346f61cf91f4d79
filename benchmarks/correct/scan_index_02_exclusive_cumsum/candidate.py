import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exclusive_cumsum_kernel(x_ptr, out_ptr, L, stride_xb, stride_xl, stride_ob, stride_ol, BLOCK_L: tl.constexpr):
    pid = tl.program_id(0)
    x_base = x_ptr + pid * stride_xb
    o_base = out_ptr + pid * stride_ob
    running = tl.zeros([1], dtype=tl.float32)
    for blk in range(0, tl.cdiv(L, BLOCK_L)):
        idx = blk * BLOCK_L + tl.arange(0, BLOCK_L)
        m = idx < L
        v = tl.load(x_base + idx * stride_xl, mask=m, other=0.0).to(tl.float32)
        incl = tl.cumsum(v, axis=0)
        excl = incl - v + running  # sum of strictly earlier elements
        tl.store(o_base + idx * stride_ol, excl, mask=m)
        running += tl.sum(v, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.dim in (1, -1) and x.dim() == 2
        B, L = x.shape
        out = torch.empty_like(x)
        exclusive_cumsum_kernel[(B,)](
            x, out, L, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK_L=256,
        )
        return out
