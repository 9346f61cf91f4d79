import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean over two non-adjacent dimensions (channels and width) of an NCHW tensor."""

    def __init__(self, dims=(1, 3), keepdim: bool = False) -> None:
        super().__init__()
        self.dims = tuple(dims)
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dims, keepdim=self.keepdim)


batch_size = 2
channels = 24
height = 20
width = 8


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [(1, -1), True]
