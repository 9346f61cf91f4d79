import torch
import torch.nn as nn


class Model(nn.Module):
    """Exclusive prefix sum: y[i] = sum_{j<i} x[j], defined as cumsum(x) - x."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim) - x


batch_size = 16
seq_len = 2048
dim = 1


def get_inputs():
    return [torch.randn(batch_size, seq_len)]


def get_init_inputs():
    return [dim]
