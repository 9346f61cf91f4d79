import torch
import torch.nn as nn


class Model(nn.Module):
    """Standard 2-D convolution (square kernel, zero padding) with bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 2
in_channels = 8
out_channels = 16
kernel_size = 3
stride = 1
padding = 1
height = 10
width = 12


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
