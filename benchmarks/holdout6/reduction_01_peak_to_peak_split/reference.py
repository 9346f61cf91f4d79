import torch
import torch.nn as nn


class Model(nn.Module):
    """Peak-to-peak range along a dimension: torch.amax(x, dim, keepdim) - torch.amin(x, dim, keepdim)."""

    def __init__(self, dim: int = 1, keepdim: bool = False) -> None:
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=self.dim, keepdim=self.keepdim) - torch.amin(x, dim=self.dim, keepdim=self.keepdim)


batch = 4
seq_len = 200
features = 24


def get_inputs():
    return [torch.randn(batch, seq_len, features)]


def get_init_inputs():
    return [1, True]
