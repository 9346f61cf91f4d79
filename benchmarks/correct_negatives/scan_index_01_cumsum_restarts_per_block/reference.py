import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive prefix sum along dim 1."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


batch_size = 16
seq_len = 1024
dim = 1


def get_inputs():
    return [torch.randn(batch_size, seq_len)]


def get_init_inputs():
    return [dim]
