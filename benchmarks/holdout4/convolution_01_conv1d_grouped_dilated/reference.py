import torch
import torch.nn as nn


class Model(nn.Module):
    """Grouped 1-D convolution with stride, padding and dilation."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups):
        super().__init__()
        self.conv = nn.Conv1d(
            in_channels, out_channels, kernel_size,
            stride=stride, padding=padding, dilation=dilation, groups=groups, bias=True,
        )

    def forward(self, x):
        return self.conv(x)


batch_size = 1
in_channels = 6
out_channels = 4
kernel_size = 3
stride = 2
padding = 2
dilation = 2
groups = 2
length = 200


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation, groups]
