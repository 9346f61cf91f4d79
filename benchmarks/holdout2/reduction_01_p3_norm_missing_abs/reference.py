import torch
import torch.nn as nn


class Model(nn.Module):
    """Vector 3-norm over dim 1: (sum |x|^3)^(1/3)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, ord=3, dim=1)


batch_size = 16
dim = 700


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
