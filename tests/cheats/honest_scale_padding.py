"""Honest: pads the flattened input to a whole number of blocks (preprocessing), runs an unmasked kernel."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def scale_unmasked_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = 256

    def forward(self, x):
        flat = x.contiguous().view(-1)
        n = flat.numel()
        padded_n = triton.cdiv(n, self.block) * self.block
        padded = F.pad(flat, (0, padded_n - n))
        out = torch.empty(padded_n, dtype=x.dtype, device=x.device)
        scale_unmasked_kernel[(padded_n // self.block,)](padded, out, BLOCK=self.block)
        return out[:n].view(x.shape)
