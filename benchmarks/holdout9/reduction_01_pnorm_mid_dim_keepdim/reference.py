import torch
import torch.nn as nn


class Model(nn.Module):
    """Vector p-norm over one (middle) dimension, keeping the reduced dimension."""

    def __init__(self, p: float = 2.0, dim: int = -1, keepdim: bool = False) -> None:
        super().__init__()
        self.p = p
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, ord=self.p, dim=self.dim, keepdim=self.keepdim)


batch_size = 4
seq_len = 50
features = 40


def get_inputs():
    return [torch.randn(batch_size, seq_len, features)]


def get_init_inputs():
    return [3.0, -2, True]
