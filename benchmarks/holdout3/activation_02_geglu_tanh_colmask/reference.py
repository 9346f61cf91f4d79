import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """GEGLU gate of a transformer MLP: split the projection in two halves, value * GELU(gate)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value, gate = x.chunk(2, dim=-1)
        return value * F.gelu(gate)


batch_size = 8
hidden = 300


def get_inputs():
    return [torch.randn(batch_size, 2 * hidden)]


def get_init_inputs():
    return []
