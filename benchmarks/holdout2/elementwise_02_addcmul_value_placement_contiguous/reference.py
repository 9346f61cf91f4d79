import torch
import torch.nn as nn


class Model(nn.Module):
    """addcmul: x + value * t1 * t2."""

    def __init__(self, value: float = 0.5) -> None:
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor, t1: torch.Tensor, t2: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(x, t1, t2, value=self.value)


batch_size = 32
dim = 300


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
