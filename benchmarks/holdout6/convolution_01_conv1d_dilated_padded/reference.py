import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.nn.functional.conv1d(input, weight, bias, stride, padding, dilation)."""

    def __init__(self, stride: int = 1, padding: int = 3, dilation: int = 3) -> None:
        super().__init__()
        self.stride = stride
        self.padding = padding
        self.dilation = dilation

    def forward(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.conv1d(input, weight, bias, stride=self.stride, padding=self.padding, dilation=self.dilation)


batch_size = 2
in_channels = 5
out_channels = 12
kernel_size = 3
length = 80
stride = 1
padding = 3
dilation = 3


def get_inputs():
    x = torch.randn(batch_size, in_channels, length)
    w = torch.randn(out_channels, in_channels, kernel_size) * 0.3
    b = torch.randn(out_channels)
    return [x, w, b]


def get_init_inputs():
    return [stride, padding, dilation]
