import torch
import torch.nn as nn


class Model(nn.Module):
    """2D average pooling with padding and ceil_mode (count_include_pad left at its default)."""

    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.avg_pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avg_pool(x)


batch_size = 2
channels = 3
height = 16
width = 18
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
