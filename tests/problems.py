"""Small real problems for tests: a KernelBench-style reference and Triton candidates with known defects."""

from __future__ import annotations

from pathlib import Path

SCALE_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


rows = 4
n = 1000


def get_inputs():
    return [torch.randn(rows, n)]


def get_init_inputs():
    return []
"""

SCALE_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
"""


def scale_candidate(*replacements: tuple[str, str]) -> str:
    """The correct scale candidate with exact text replacements applied (each must match)."""
    source = SCALE_CANDIDATE
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


def write_problem(
    folder: Path, candidate: str, reference: str = SCALE_REFERENCE, toml: str | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference)
    (folder / "candidate.py").write_text(candidate)
    if toml is not None:
        (folder / "problem.toml").write_text(toml)
    return folder
