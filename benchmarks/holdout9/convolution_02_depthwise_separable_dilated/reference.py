import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise-separable 2-D convolution: a dilated, strided depthwise conv followed by a 1x1 pointwise conv."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, bias=False):
        super().__init__()
        self.depthwise = nn.Conv2d(
            in_channels,
            in_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=in_channels,
            bias=bias,
        )
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


batch_size = 2
in_channels = 8
out_channels = 16
height = 14
width = 18
kernel_size = 3
stride = 2
padding = 2
dilation = 2


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation, True]
