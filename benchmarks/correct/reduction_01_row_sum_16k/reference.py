import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum reduction over the last dimension of long rows."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch_size = 16
row_len = 16384
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, row_len)]


def get_init_inputs():
    return [reduce_dim]
