import torch
import torch.nn as nn


class Model(nn.Module):
    """Downsampling block: grouped 3x3 convolution with stride 2, then LeakyReLU."""

    def __init__(self, in_channels: int, out_channels: int, groups: int = 2, negative_slope: float = 0.1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(
            in_channels, out_channels, kernel_size=3, stride=2, padding=1, groups=groups, bias=True
        )
        self.act = nn.LeakyReLU(negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


batch_size = 1
in_channels = 4
out_channels = 6
groups = 2
height = 14
width = 18


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, groups, 0.1]
