import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax with temperature: softmax(x / T) over the last dimension."""

    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=-1)


batch_size = 16
dim = 100
temperature = 2.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [temperature]
