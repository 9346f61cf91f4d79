import torch
import torch.nn as nn


class Model(nn.Module):
    """AvgPool2d with a divisor override, then tanh, then a learnable per-channel scale."""

    def __init__(self, channels, kernel_size, stride, padding, divisor_override):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size, stride=stride, padding=padding,
                                 divisor_override=divisor_override)
        self.scale = nn.Parameter(torch.randn(channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(x)
        x = torch.tanh(x)
        return x * self.scale


batch_size = 4
channels = 8
height = 20
width = 20
kernel_size = 3
stride = 2
padding = 1
divisor_override = 4


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size, stride, padding, divisor_override]
