import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled index_add: out = x with alpha * source[..., j] accumulated into x[..., index[j]] along `dim`."""

    def __init__(self, dim: int = -1, alpha: float = 0.5) -> None:
        super().__init__()
        self.dim = dim
        self.alpha = alpha

    def forward(self, x: torch.Tensor, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        return torch.index_add(x, self.dim, index, source, alpha=self.alpha)


batch_size = 12
num_slots = 40
num_updates = 24


def get_inputs():
    x = torch.randn(batch_size, num_slots)
    index = torch.randint(0, num_slots, (num_updates,))
    source = torch.randn(batch_size, num_updates)
    return [x, index, source]


def get_init_inputs():
    return [-1, 0.5]
