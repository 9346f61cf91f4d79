import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.gather along dim 1: out[i, j] = x[i, index[i, j]]."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)


batch_size = 16
dim = 64
num_picks = 32


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randint(0, dim, (batch_size, num_picks))]


def get_init_inputs():
    return []
