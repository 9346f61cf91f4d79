import torch
import torch.nn as nn


class Model(nn.Module):
    """Reverse cumulative sum along dim 1: out[i, j] = sum_{k >= j} x[i, k]."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(torch.cumsum(torch.flip(x, dims=[1]), dim=1), dims=[1])


batch_size = 16
dim = 200


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
