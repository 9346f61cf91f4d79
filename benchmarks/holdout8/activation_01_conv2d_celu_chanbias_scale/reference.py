import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d -> CELU(alpha) -> per-channel bias add -> scaling."""

    def __init__(self, in_channels, out_channels, kernel_size, alpha, bias_shape, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.alpha = alpha
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.conv(x)
        x = F.celu(x, alpha=self.alpha)
        x = x + self.bias
        x = x * self.scaling_factor
        return x


batch_size = 2
in_channels = 3
out_channels = 8
height = 16
width = 16
kernel_size = 3
alpha = 0.5
bias_shape = (out_channels, 1, 1)
scaling_factor = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, alpha, bias_shape, scaling_factor]
