import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 2D convolution with a square kernel (groups == in_channels) and bias."""

    def __init__(self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 bias: bool = False) -> None:
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                groups=in_channels, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 2
in_channels = 3
kernel_size = 3
stride = 1
padding = 1
height = 12
width = 12


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, kernel_size, stride, padding, True]
