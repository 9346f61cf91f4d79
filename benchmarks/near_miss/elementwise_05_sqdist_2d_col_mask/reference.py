import torch
import torch.nn as nn


class Model(nn.Module):
    """Squared difference of each row of a matrix to a centroid vector."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, centroid: torch.Tensor) -> torch.Tensor:
        return (a - centroid) ** 2


M = 32
N = 128


def get_inputs():
    return [torch.randn(M, N), torch.randn(N)]


def get_init_inputs():
    return []
