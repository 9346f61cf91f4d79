import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D average pooling over an NCHW feature map (PyTorch defaults: zero padding counts in the average)."""

    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 3
height = 20
width = 28
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
