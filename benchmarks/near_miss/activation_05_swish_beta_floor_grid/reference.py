import torch
import torch.nn as nn


class Model(nn.Module):
    """Swish with a trainable-style beta: x * sigmoid(beta * x)."""

    def __init__(self, beta: float = 1.0) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.beta * x)


batch_size = 8
dim = 1000
beta = 1.5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta]
