import torch
import torch.nn as nn


class Model(nn.Module):
    """Adaptive 2-D max pooling to a fixed (out_h, out_w) grid."""

    def __init__(self, out_h: int, out_w: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d((out_h, out_w))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 3
height = 30
width = 44
out_h = 5
out_w = 7


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [out_h, out_w]
