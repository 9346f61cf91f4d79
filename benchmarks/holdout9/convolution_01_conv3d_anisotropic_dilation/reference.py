import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D convolution with an anisotropic kernel, per-axis stride, padding and dilation."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, bias=True):
        super().__init__()
        self.conv3d = nn.Conv3d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            bias=bias,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv3d(x)


batch_size = 2
in_channels = 2
out_channels = 8
depth = 6
height = 10
width = 12
kernel_size = (3, 2, 3)
stride = (2, 1, 1)
padding = (1, 0, 2)
dilation = (1, 1, 2)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation, True]
