import torch
import torch.nn as nn


class Model(nn.Module):
    """Cumulative product along a dimension (e.g. compounding per-step growth factors)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=self.dim)


batch_size = 16
steps = 2048
dim = 1


def get_inputs():
    # growth factors close to 1 so that the product stays in range over 2048 steps
    return [1.0 + 0.01 * torch.randn(batch_size, steps)]


def get_init_inputs():
    return [dim]
