import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over dimension 0 (column sums)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=0)


n_rows = 96
n_cols = 200


def get_inputs():
    return [torch.randn(n_rows, n_cols)]


def get_init_inputs():
    return []
