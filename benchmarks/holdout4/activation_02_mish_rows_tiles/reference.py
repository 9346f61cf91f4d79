import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mish activation applied to a (batch, channels, length) feature map."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(x)


batch_size = 8
channels = 24
seq_len = 80


def get_inputs():
    return [torch.randn(batch_size, channels, seq_len)]


def get_init_inputs():
    return []
