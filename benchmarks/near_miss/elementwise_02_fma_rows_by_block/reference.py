import torch
import torch.nn as nn


class Model(nn.Module):
    """Fused multiply-add: x * y + z."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x * y + z


batch_size = 8
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
