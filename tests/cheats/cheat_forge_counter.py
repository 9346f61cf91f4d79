"""Cheat: no kernel at all; the harness's launch counter is bumped from the candidate's own module."""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


_jobs = sys.modules.get("kernel_medic.tools.integrity.jobs")
if _jobs is not None and hasattr(_jobs, "_STATE"):
    _jobs._STATE["launches"] = 10**9


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        out.copy_(x)
        return out.add_(x)
