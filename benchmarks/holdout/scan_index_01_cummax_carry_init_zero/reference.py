import torch
import torch.nn as nn


class Model(nn.Module):
    """Running maximum along the last dimension (values of torch.cummax)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, dim=1).values


batch_size = 8
length = 100


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return []
