import torch
import torch.nn as nn


class Model(nn.Module):
    """Temperature-scaled softmax over the channel dimension (dim=1) of a (batch, channels, length) tensor,
    e.g. a per-position distribution over codebook entries."""

    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=1)


batch_size = 4
channels = 20
length = 48
temperature = 0.7


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [temperature]
