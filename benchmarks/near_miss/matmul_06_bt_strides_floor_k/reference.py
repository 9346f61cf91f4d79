import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B^T with B stored as (N, K)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b.T)


M = 40
K = 64
N = 24


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
