import torch
import torch.nn as nn


class Model(nn.Module):
    """Reverse cumulative sum: y[i] = sum_{j>=i} x[j]."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)


batch_size = 16
input_shape = 4096
dim = 1


def get_inputs():
    return [torch.randn(batch_size, input_shape)]


def get_init_inputs():
    return [dim]
