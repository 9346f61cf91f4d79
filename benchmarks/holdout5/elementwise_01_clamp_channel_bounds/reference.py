import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps every channel of an NCHW tensor to its own [lo, hi] range (bounds broadcast along C)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=lo.view(1, -1, 1, 1), max=hi.view(1, -1, 1, 1))


batch_size = 2
channels = 6
height = 12
width = 20


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    lo = -0.2 - torch.rand(channels)
    hi = 0.2 + torch.rand(channels)
    return [x, lo, hi]


def get_init_inputs():
    return []
