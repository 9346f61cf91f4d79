import torch
import torch.nn as nn


class Model(nn.Module):
    """Cumulative trapezoidal integral with a constant spacing `dx` along `dim`."""

    def __init__(self, dx: float = 0.25, dim: int = 1) -> None:
        super().__init__()
        self.dx = dx
        self.dim = dim

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return torch.cumulative_trapezoid(y, dx=self.dx, dim=self.dim)


batch_size = 4
seq_len = 50
channels = 20


def get_inputs():
    return [torch.randn(batch_size, seq_len, channels)]


def get_init_inputs():
    return [0.25, 1]
