import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D average pooling that excludes the zero padding from the average."""

    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.pool = nn.AvgPool3d(
            kernel_size=kernel_size, stride=stride, padding=padding, count_include_pad=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 3
depth = 10
height = 12
width = 14
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
