import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d -> LayerNorm over the channel dimension (ConvNeXt "channels_first" LayerNorm) -> HardSwish."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.LayerNorm(out_channels, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y = self.norm(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return F.hardswish(y)


batch_size = 2
in_channels = 3
out_channels = 24
height = 12
width = 12
kernel_size = 3
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, eps]
