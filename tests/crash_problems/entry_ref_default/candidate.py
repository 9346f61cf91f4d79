import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def block_scale_kernel(x_ptr, out_ptr, n, BLKQ: tl.constexpr):
    offs = tl.program_id(0) * BLKQ + tl.arange(0, BLKQ)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 0.5, mask=mask)


# Named differently from the reference's entry, and the block size is the caller's to give.
def block_scale_triton(x, BLKQ):
    out = torch.empty_like(x)
    n = x.numel()
    block_scale_kernel[(triton.cdiv(n, BLKQ),)](x, out, n, BLKQ=BLKQ)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return block_scale_triton(x)
