"""Honest: a module-level launch helper, flattening with reshape and restoring the shape with view_as."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 128


@triton.jit
def _scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def launch_scale(flat: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(flat)
    n = flat.numel()
    _scale[(triton.cdiv(n, BLOCK_SIZE),)](flat, out, n, factor, BLOCK=BLOCK_SIZE)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = 2.0

    def forward(self, x):
        flat = x.contiguous().reshape(-1)
        return launch_scale(flat, self.factor).view_as(x)
