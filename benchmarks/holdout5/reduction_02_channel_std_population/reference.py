import torch
import torch.nn as nn


class Model(nn.Module):
    """Population standard deviation (correction=0) over one dimension, keeping the reduced axis."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.std(x, dim=self.dim, correction=0, keepdim=True)


batch_size = 4
channels = 48
seq_len = 40
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, channels, seq_len)]


def get_init_inputs():
    return [reduce_dim]
