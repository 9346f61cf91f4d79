import torch
import torch.nn as nn


class Model(nn.Module):
    """Euclidean norm over the last dimension of a half-precision tensor."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, ord=2, dim=-1)


batch_size = 8
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
