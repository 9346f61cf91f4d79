import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.linalg.vector_norm(x, ord=2, dim=0, keepdim=True): the L2 norm of every column."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, ord=2, dim=0, keepdim=True)


num_features = 40
num_samples = 128


def get_inputs():
    return [torch.randn(num_samples, num_features)]


def get_init_inputs():
    return []
