import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def add_one(x):
    # dtypes and the allocation spelled off the top-level triton package
    assert x.dtype in [triton.float32, triton.float16], "unsupported dtype"
    out = triton.empty(x.shape, dtype=x.dtype, device=x.device)
    scratch = triton.testing.zeros(x.shape, dtype=tl.float32)  # host code spelling torch's factories off tl
    n = x.numel()
    BLOCK = int(2 ** tl.ceil(tl.log2(100)))  # Triton math on host numbers
    add_one_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    return out + scratch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return add_one(x)
