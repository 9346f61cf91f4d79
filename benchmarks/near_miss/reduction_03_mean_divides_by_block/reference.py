import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean over the last dimension, keeping it."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=-1, keepdim=True)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
