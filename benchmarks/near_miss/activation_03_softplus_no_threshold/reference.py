import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Softplus (beta=1, threshold=20)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x)


batch_size = 16
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
