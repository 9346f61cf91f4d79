import torch
import torch.nn as nn


class Model(nn.Module):
    """Hardsigmoid: relu6(x + 3) / 6."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x)


batch_size = 16
dim = 777


def get_inputs():
    return [torch.randn(batch_size, dim) * 3]


def get_init_inputs():
    return []
