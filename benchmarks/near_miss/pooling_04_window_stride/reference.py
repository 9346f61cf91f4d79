import torch
import torch.nn as nn


class Model(nn.Module):
    """Overlapping 1D max pooling: windows of 3, stride 2."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 4
channels = 8
length = 64


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return []
