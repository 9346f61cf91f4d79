import torch
import torch.nn as nn


class Model(nn.Module):
    """Adaptive 2-D average pooling to a fixed output grid that does not divide the input."""

    def __init__(self, out_h: int, out_w: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d((out_h, out_w))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 12
height = 19
width = 26
out_h = 4
out_w = 5


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [out_h, out_w]
