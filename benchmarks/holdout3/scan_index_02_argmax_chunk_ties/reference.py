import torch
import torch.nn as nn


class Model(nn.Module):
    """Index of the largest value along `dim` (first occurrence on ties, as torch.argmax)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 24
features = 300
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [reduce_dim]
