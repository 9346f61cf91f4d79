import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the last dimension of a half-precision tensor (result in half)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1)


batch_size = 32
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
