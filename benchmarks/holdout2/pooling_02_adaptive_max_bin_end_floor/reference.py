import torch
import torch.nn as nn


class Model(nn.Module):
    """AdaptiveMaxPool1d."""

    def __init__(self, output_size: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveMaxPool1d(output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 4
channels = 6
length = 100
output_size = 7


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [output_size]
