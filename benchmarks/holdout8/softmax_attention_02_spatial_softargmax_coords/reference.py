import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d feature map -> per-channel spatial softmax (with temperature) -> expected (x, y) keypoint
    coordinates on a [-1, 1] grid, interleaved as (x0, y0, x1, y1, ...)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, temperature: float) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        N, C, H, W = x.shape
        attn = torch.softmax(x.reshape(N, C, H * W) / self.temperature, dim=-1)
        pos_y, pos_x = torch.meshgrid(
            torch.linspace(-1.0, 1.0, H, device=x.device, dtype=x.dtype),
            torch.linspace(-1.0, 1.0, W, device=x.device, dtype=x.dtype),
            indexing="ij",
        )
        ex = (attn * pos_x.reshape(1, 1, H * W)).sum(dim=-1)
        ey = (attn * pos_y.reshape(1, 1, H * W)).sum(dim=-1)
        return torch.stack([ex, ey], dim=-1).reshape(N, 2 * C)


batch_size = 2
in_channels = 3
out_channels = 8
height = 12
width = 10
kernel_size = 3
temperature = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, temperature]
