import torch
import torch.nn as nn


class Model(nn.Module):
    """Max over dimension 1."""

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim)[0]


batch_size = 16
dim1 = 1000


def get_inputs():
    return [torch.randn(batch_size, dim1)]


def get_init_inputs():
    return [1]
