import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D max pooling with stride, implicit padding and dilation."""

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 2
height = 20
width = 24
kernel_size = 3
stride = 2
padding = 1
dilation = 2


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
