import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """CELU with a configurable alpha."""

    def __init__(self, alpha: float = 0.5) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.celu(x, alpha=self.alpha)


batch_size = 16
dim = 777


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
