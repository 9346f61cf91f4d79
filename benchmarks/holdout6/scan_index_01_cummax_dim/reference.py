import torch
import torch.nn as nn


class Model(nn.Module):
    """Running maximum along `dim`: torch.cummax(input, dim).values"""

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, dim=self.dim).values


batch_size = 4
seq_len = 64
hidden = 12


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [1]
