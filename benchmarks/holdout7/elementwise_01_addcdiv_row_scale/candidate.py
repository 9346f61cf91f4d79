"""Broadcasting ``torch.addcdiv`` in Triton.

    out[i, j] = input[j] + value * tensor1[i] / tensor2[i, j]

The broadcast operands are never expanded in memory: the kernel walks the flattened (M, N) output and
recovers the row / column of every element to index the smaller operands.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def addcdiv_bcast_kernel(
    bias_ptr,  # (N,)   -> broadcast over rows
    num_ptr,  # (M,)   -> broadcast over columns
    den_ptr,  # (M, N) contiguous
    out_ptr,  # (M, N) contiguous
    n_elements,
    N,
    value,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements

    # flat index -> (row, col) of the output
    row = offs // N
    col = offs % N

    bias = tl.load(bias_ptr + col, mask=mask, other=0.0).to(tl.float32)
    num = tl.load(num_ptr + col, mask=mask, other=0.0).to(tl.float32)
    den = tl.load(den_ptr + offs, mask=mask, other=1.0).to(tl.float32)

    out = bias + value * (num / den)
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def addcdiv_triton(input: torch.Tensor, tensor1: torch.Tensor, tensor2: torch.Tensor, value: float = 1.0) -> torch.Tensor:
    """out = input + value * tensor1 / tensor2 for input (N,), tensor1 (M, 1), tensor2 (M, N)."""
    out_shape = torch.broadcast_shapes(input.shape, tensor1.shape, tensor2.shape)
    assert len(out_shape) == 2, "expects a 2-D broadcast result"
    M, N = out_shape

    bias = input.contiguous().view(-1)
    num = tensor1.contiguous().view(-1)
    den = tensor2.contiguous()
    assert bias.numel() == N and num.numel() == M, "unsupported broadcast pattern"

    out = torch.empty(out_shape, device=tensor2.device, dtype=tensor2.dtype)
    n_elements = input.numel()

    BLOCK_SIZE = 256
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    addcdiv_bcast_kernel[grid](
        bias,
        num,
        den,
        out,
        n_elements,
        N,
        float(value),
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, value: float = 1.0) -> None:
        super().__init__()
        self.value = value

    def forward(self, input: torch.Tensor, tensor1: torch.Tensor, tensor2: torch.Tensor) -> torch.Tensor:
        return addcdiv_triton(input, tensor1, tensor2, value=self.value)
