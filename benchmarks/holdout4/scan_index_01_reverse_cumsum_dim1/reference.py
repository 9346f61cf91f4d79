import torch
import torch.nn as nn


class Model(nn.Module):
    """Reverse (suffix) cumulative sum along a given dimension."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)


batch_size = 2
seq_len = 40
hidden = 16
dim = 1


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [dim]
