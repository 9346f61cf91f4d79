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

# The same operator with its constant behind a method: the offline engine reads the reference's forward
# expression (the reference-formula rule) but not helpers it calls, so a candidate with a wrong constant stays
# unrepaired offline while an LLM (or a person) can still fix it.
OPAQUE_SCALE_REFERENCE = SCALE_REFERENCE.replace(
    "    def forward(self, x):\n        return x * 2.0\n",
    "    def forward(self, x):\n        return self.double(x)\n\n"
    "    def double(self, x):\n        return x * 2.0\n",
)
# A scale of 2.5 behind a method: no rule reads it and no generic constant edit of a candidate's 3.0 reaches
# it (the edit space tries 0, 1, 0.5, 2 and the reference's call arguments), so such a case stays unrepaired.
UNREACHABLE_SCALE_REFERENCE = OPAQUE_SCALE_REFERENCE.replace("return x * 2.0", "return x * 2.5")


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


# Two seeds, no value or shape variants: a full tier of two cases, for tests that only need a repair to run.
LIGHT_TOML = "seeds = [0, 1]\nvalue_variants = false\nautomatic_shapes = false\n"


def write_problem(
    folder: Path, candidate: str, reference: str = SCALE_REFERENCE, toml: str | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference)
    (folder / "candidate.py").write_text(candidate)
    if toml is not None:
        (folder / "problem.toml").write_text(toml)
    return folder


# A padding op whose wrapper sizes its output with one side of its padding: the wrong shape.
PAD_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, padding):
        super().__init__()
        self.padding = padding

    def forward(self, x):
        return torch.nn.functional.pad(x, (self.padding, self.padding)) * 2.0


def get_inputs():
    return [torch.randn(8, 100)]


def get_init_inputs():
    return [3]
"""

PAD_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pad_kernel(x_ptr, out_ptr, L, L_out, P, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    src = offs - P
    inside = (src >= 0) & (src < L) & (offs < L_out)
    x = tl.load(x_ptr + row * L + src, mask=inside, other=0.0)
    tl.store(out_ptr + row * L_out + offs, x * 2.0, mask=offs < L_out)


class ModelNew(nn.Module):
    def __init__(self, padding):
        super().__init__()
        self.padding = padding

    def forward(self, x):
        x = x.contiguous()
        B, L = x.shape
        L_out = L + self.padding
        out = torch.empty(B, L_out, device=x.device, dtype=x.dtype)
        pad_kernel[(B, triton.cdiv(L_out, 128))](x, out, L, L_out, self.padding, BLOCK=128)
        return out
"""
