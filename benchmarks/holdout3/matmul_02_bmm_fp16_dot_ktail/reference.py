import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matrix multiplication: C[b] = A[b] @ B[b]."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 2
m = 32
k = 48
n = 40


def get_inputs():
    A = torch.randn(batch_size, m, k)
    B = torch.randn(batch_size, k, n)
    return [A, B]


def get_init_inputs():
    return []
