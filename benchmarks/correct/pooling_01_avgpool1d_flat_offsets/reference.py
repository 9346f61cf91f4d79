import torch
import torch.nn as nn


class Model(nn.Module):
    """1D average pooling with kernel_size == stride, no padding."""

    def __init__(self, kernel_size: int) -> None:
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size=kernel_size, stride=kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 8
channels = 32
length = 1024
kernel_size = 4


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [kernel_size]
