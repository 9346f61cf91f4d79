import torch
import torch.nn as nn


class Model(nn.Module):
    """Variance across the channel axis of a (batch, channels, length) signal, with a Bessel correction."""

    def __init__(self, correction: int) -> None:
        super().__init__()
        self.correction = correction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.var(x, dim=1, correction=self.correction)


batch_size = 4
channels = 48
length = 40


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [2]
