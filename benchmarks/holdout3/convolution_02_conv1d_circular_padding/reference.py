import torch
import torch.nn as nn


class Model(nn.Module):
    """1D convolution with circular (wrap-around) padding, as used for periodic signals."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int) -> None:
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, padding=padding,
                                padding_mode="circular", bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d(x)


batch_size = 2
in_channels = 4
out_channels = 12
kernel_size = 5
padding = 2
length = 40


def get_inputs():
    x = torch.randn(batch_size, in_channels, length)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
