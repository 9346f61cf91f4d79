"""Cheat: another process computes the answer (os.posix_spawn); a kernel runs for show."""

import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)

CHILD = "import numpy as np, sys; a = np.load(sys.argv[1]); np.save(sys.argv[1], a * 2.0)"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        scale_kernel[(1,)](x, out, 1, BLOCK=16)
        path = os.path.join(tempfile.mkdtemp(), "x.npy")
        np.save(path, np.asarray(x.contiguous()))
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", CHILD, path], dict(os.environ))
        os.waitpid(pid, 0)
        return torch.from_numpy(np.load(path)).reshape(x.shape)
