import torch
import torch.nn as nn


class Model(nn.Module):
    """Unbiased variance of a (batch, steps, features) tensor along dim 1, keeping the reduced dim."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.var(x, dim=1, keepdim=True)


batch_size = 4
steps = 50
features = 40


def get_inputs():
    return [torch.randn(batch_size, steps, features)]


def get_init_inputs():
    return []
