import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sq_err_block_kernel(a_ptr, b_ptr, out_ptr, numel, BLOCK: tl.constexpr):
    block_id = tl.program_id(0)
    idx = block_id * BLOCK + tl.arange(0, BLOCK)
    valid = idx < numel
    a = tl.load(a_ptr + idx, mask=valid, other=0.0)
    b = tl.load(b_ptr + idx, mask=valid, other=0.0)
    tl.store(out_ptr + block_id, tl.sum((a - b) * (a - b), axis=0))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        a = predictions.reshape(-1).contiguous()
        b = targets.reshape(-1).contiguous()
        numel = a.numel()
        BLOCK = 128
        n_blocks = triton.cdiv(numel, BLOCK)
        block_sums = torch.empty(n_blocks, device=a.device, dtype=torch.float32)
        sq_err_block_kernel[(n_blocks,)](a, b, block_sums, numel, BLOCK=BLOCK)
        return block_sums.sum()
