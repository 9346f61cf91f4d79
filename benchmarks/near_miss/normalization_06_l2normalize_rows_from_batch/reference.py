import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """L2-normalise the last dimension of a (batch, seq, dim) tensor."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, p=2.0, dim=-1)


batch_size = 4
seq_len = 12
dim = 96


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return []
