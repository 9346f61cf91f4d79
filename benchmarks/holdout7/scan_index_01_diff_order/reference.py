import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.diff: n-th forward difference along a dimension.

    n = 1: out[..., i, ...] = x[..., i + 1, ...] - x[..., i, ...]; higher n applies it recursively, so the
    output is n elements shorter along ``dim``.
    """

    def __init__(self, n: int = 1, dim: int = -1) -> None:
        super().__init__()
        self.n = n
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.diff(x, n=self.n, dim=self.dim)


B = 4
L = 40
C = 20


def get_inputs():
    return [torch.randn(B, L, C)]


def get_init_inputs():
    return [3, 1]
