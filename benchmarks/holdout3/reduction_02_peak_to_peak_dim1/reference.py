import torch
import torch.nn as nn


class Model(nn.Module):
    """Peak-to-peak (max - min) of a 3-D tensor along one dimension."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=self.dim) - torch.amin(x, dim=self.dim)


batch_size = 8
reduce_size = 100
features = 48
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, reduce_size, features)]


def get_init_inputs():
    return [reduce_dim]
