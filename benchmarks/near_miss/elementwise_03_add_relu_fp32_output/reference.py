import torch
import torch.nn as nn


class Model(nn.Module):
    """Residual add followed by ReLU, in half precision."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + residual)


batch_size = 8
dim = 1000


def get_inputs():
    return [
        torch.randn(batch_size, dim, dtype=torch.float16),
        torch.randn(batch_size, dim, dtype=torch.float16),
    ]


def get_init_inputs():
    return []
