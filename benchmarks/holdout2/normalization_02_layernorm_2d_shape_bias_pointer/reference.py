import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the last two dimensions (channels, length)."""

    def __init__(self, channels: int, length: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm((channels, length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
channels = 8
length = 40


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, length]
