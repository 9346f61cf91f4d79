import torch
import torch.nn as nn


class Model(nn.Module):
    """Minimum over dimension 0 (per column)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=0).values


M = 48
N = 40


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
