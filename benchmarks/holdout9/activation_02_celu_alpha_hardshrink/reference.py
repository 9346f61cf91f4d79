import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """CELU with a configurable alpha, then hard shrinkage with threshold lambd."""

    def __init__(self, alpha: float = 1.75, lambd: float = 0.3) -> None:
        super().__init__()
        self.alpha = alpha
        self.lambd = lambd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.celu(x, alpha=self.alpha)
        return F.hardshrink(y, lambd=self.lambd)


batch_size = 4
channels = 6
height = 16
width = 16


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [1.75, 0.3]
