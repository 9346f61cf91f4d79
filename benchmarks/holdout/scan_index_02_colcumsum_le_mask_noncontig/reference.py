import torch
import torch.nn as nn


class Model(nn.Module):
    """Cumulative sum down the rows (dim 0)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=0)


rows = 24
cols = 32


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
