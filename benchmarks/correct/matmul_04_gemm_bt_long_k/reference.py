import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication with a transposed right operand: C = A @ B.T, long K."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 64
N = 96
K = 1024


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(N, K)
    return [A, B]


def get_init_inputs():
    return []
