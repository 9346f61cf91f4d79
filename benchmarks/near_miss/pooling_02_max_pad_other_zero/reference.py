import torch
import torch.nn as nn


class Model(nn.Module):
    """Max pooling 3x3, stride 2, padding 1."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 3
height = 12
width = 12


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
