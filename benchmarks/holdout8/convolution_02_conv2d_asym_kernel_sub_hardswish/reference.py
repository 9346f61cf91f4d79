import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d with an asymmetric kernel, stride and padding, minus a constant, then HardSwish."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, subtract_value):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.subtract_value = subtract_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = x - self.subtract_value
        x = F.hardswish(x)
        return x


batch_size = 2
in_channels = 3
out_channels = 16
height = 12
width = 16
kernel_size = (3, 5)
stride = (2, 1)
padding = (1, 2)
subtract_value = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, subtract_value]
