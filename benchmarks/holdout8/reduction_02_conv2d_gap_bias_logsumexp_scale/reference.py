import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d -> global average pool -> bias add -> logsumexp over channels -> scale."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape, scale: float) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.mean(x, dim=(2, 3), keepdim=True)
        x = x + self.bias
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x * self.scale


batch_size = 8
in_channels = 3
out_channels = 12
height = 16
width = 16
kernel_size = 3
scale = 10.0


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, (out_channels, 1, 1), scale]
