import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.max_pool1d with padding, dilation and ceil_mode."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool1d(
            x, self.kernel_size, stride=self.stride, padding=self.padding,
            dilation=self.dilation, ceil_mode=self.ceil_mode,
        )


BATCH = 4
CHANNELS = 6
LENGTH = 50


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [3, 2, 1, 2, True]
