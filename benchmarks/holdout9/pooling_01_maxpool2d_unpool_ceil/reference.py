import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Max-pool with indices (ceil_mode) followed by max-unpool back to the input size."""

    def __init__(self, kernel_size: int, stride: int, padding: int, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled, indices = F.max_pool2d(
            x,
            kernel_size=self.kernel_size,
            stride=self.stride,
            padding=self.padding,
            ceil_mode=self.ceil_mode,
            return_indices=True,
        )
        return F.max_unpool2d(
            pooled,
            indices,
            kernel_size=self.kernel_size,
            stride=self.stride,
            padding=self.padding,
            output_size=x.shape[-2:],
        )


batch_size = 2
channels = 4
height = 16
width = 12


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [3, 2, 1, True]
