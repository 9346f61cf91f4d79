import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds a per-channel bias to a (batch, channels, length) tensor."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return x + bias.view(1, -1, 1)


batch_size = 4
channels = 24
length = 40


def get_inputs():
    return [torch.randn(batch_size, channels, length), torch.randn(channels)]


def get_init_inputs():
    return []
