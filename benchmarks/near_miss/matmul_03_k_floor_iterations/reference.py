import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for a non-square problem."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


M = 48
K = 64
N = 32


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
