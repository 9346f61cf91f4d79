import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer that concats `AdaptiveMaxPool2d` and `AdaptiveAvgPool2d` (fastai's AdaptiveConcatPool2d head)."""

    def __init__(self, size=None) -> None:
        super().__init__()
        self.size = size or 1
        self.ap = nn.AdaptiveAvgPool2d(self.size)
        self.mp = nn.AdaptiveMaxPool2d(self.size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.mp(x), self.ap(x)], 1)


batch_size = 4
channels = 24
height = 12
width = 12


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [None]
