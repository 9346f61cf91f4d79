import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the last dimension."""

    def __init__(self, normalized_shape: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
features = 1000


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
