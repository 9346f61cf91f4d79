import torch
import torch.nn as nn


class Model(nn.Module):
    """Cumulative sum of the elements that a boolean mask keeps, along `dim`."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x * mask, dim=self.dim)


batch_size = 16
input_len = 300
dim = 1


def get_inputs():
    x = torch.randn(batch_size, input_len)
    mask = torch.randint(0, 2, (batch_size, input_len)).bool()
    return [x, mask]


def get_init_inputs():
    return [dim]
