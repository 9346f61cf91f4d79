import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear interpolation between two tensors with a fixed scalar weight."""

    def __init__(self, weight: float) -> None:
        super().__init__()
        self.weight = weight

    def forward(self, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        return torch.lerp(start, end, self.weight)


batch_size = 24
dim = 96
weight = 0.3


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [weight]
