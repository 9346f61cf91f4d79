import torch
import torch.nn as nn


class Model(nn.Module):
    """Single matrix multiplication C = A @ B with non-tile-aligned sizes."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 200
K = 300
N = 160


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
