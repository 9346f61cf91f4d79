import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.conv_transpose2d(x, weight, bias, stride, padding, output_padding) (a 2x learned upsampler)."""

    def __init__(self, stride: int = 1, padding: int = 0, output_padding: int = 0) -> None:
        super().__init__()
        self.stride = stride
        self.padding = padding
        self.output_padding = output_padding

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.conv_transpose2d(
            x, weight, bias,
            stride=self.stride, padding=self.padding, output_padding=self.output_padding,
        )


BATCH = 2
C_IN = 4
C_OUT = 3
KSIZE = 3
HEIGHT = 9
WIDTH = 11


def get_inputs():
    x = torch.randn(BATCH, C_IN, HEIGHT, WIDTH)
    weight = torch.randn(C_IN, C_OUT, KSIZE, KSIZE) * 0.3
    bias = torch.randn(C_OUT)
    return [x, weight, bias]


def get_init_inputs():
    return [2, 1, 1]
