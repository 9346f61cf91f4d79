import torch
import torch.nn as nn


class Model(nn.Module):
    """Sample standard deviation (Bessel-corrected) along one dimension."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.std(x, dim=self.dim)


batch_size = 4
seq_len = 100
features = 48


def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [1]
