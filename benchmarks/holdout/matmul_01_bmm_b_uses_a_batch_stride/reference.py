import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matrix multiply: (b, m, k) @ (b, k, n)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


batch_size = 2
m = 32
k = 32
n = 32


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
