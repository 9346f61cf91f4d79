import torch
import torch.nn as nn


class Model(nn.Module):
    """Strided 1-D transposed convolution (learned upsampling of a sequence)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.deconv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


batch_size = 2
in_channels = 6
out_channels = 5
kernel_size = 4
stride = 2
padding = 1
length = 48


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
