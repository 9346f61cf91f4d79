import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive prefix sum along a dimension."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


batch_size = 16
input_shape = 4096
dim = 1


def get_inputs():
    return [torch.randn(batch_size, input_shape)]


def get_init_inputs():
    return [dim]
