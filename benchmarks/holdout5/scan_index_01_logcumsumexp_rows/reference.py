import torch
import torch.nn as nn


class Model(nn.Module):
    """Log of the cumulative sum of exponentials along a dimension (a running log-partition function)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logcumsumexp(x, dim=self.dim)


batch_size = 12
seq_len = 300
dim = 1


def get_inputs():
    return [torch.randn(batch_size, seq_len)]


def get_init_inputs():
    return [dim]
