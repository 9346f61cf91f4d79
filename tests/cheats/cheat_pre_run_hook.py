"""Cheat: a Triton pre-run hook computes the answer inside the launch."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


def _hook(x, out, *rest, **kwargs):
    out.copy_(x.add(x))


noop_kernel.add_pre_run_hook(_hook)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        noop_kernel[(1,)](x, out, x.numel(), BLOCK=16)
        return out
