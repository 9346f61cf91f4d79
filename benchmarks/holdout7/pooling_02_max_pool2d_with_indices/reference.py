import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.max_pool2d(..., return_indices=True): pooled values and the flat (h * W + w) argmax per window."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, x: torch.Tensor):
        return F.max_pool2d(x, self.kernel_size, stride=self.stride, padding=self.padding, return_indices=True)


BATCH = 2
CHANNELS = 4
HEIGHT = 15
WIDTH = 18


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [3, 2, 1]
