import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.renorm: every slice along `dim` whose p-norm exceeds `maxnorm`
    is rescaled so that its p-norm equals `maxnorm`; other slices are left alone."""

    def __init__(self, p: float = 3.0, dim: int = 1, maxnorm: float = 8.0) -> None:
        super().__init__()
        self.p = p
        self.dim = dim
        self.maxnorm = maxnorm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.renorm(x, p=self.p, dim=self.dim, maxnorm=self.maxnorm)


batch_size = 8
channels = 24
length = 40


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [3.0, 1, 8.0]
