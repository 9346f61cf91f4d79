import torch
import torch.nn as nn


class Model(nn.Module):
    """SELU activation."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.selu(x)


batch_size = 16
dim = 384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
