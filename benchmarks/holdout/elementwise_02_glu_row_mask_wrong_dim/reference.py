import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gated linear unit over the last dimension: first half * sigmoid(second half)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.glu(x, dim=-1)


batch_size = 40
hidden = 24


def get_inputs():
    return [torch.randn(batch_size, 2 * hidden)]


def get_init_inputs():
    return []
