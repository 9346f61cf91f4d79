import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Channel-wise PReLU on a (batch, channels, length) sequence, one learned slope per channel."""

    def __init__(self, num_channels: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_channels).uniform_(0.05, 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.prelu(x, self.weight)


batch_size = 4
num_channels = 12
seq_len = 200


def get_inputs():
    return [torch.randn(batch_size, num_channels, seq_len)]


def get_init_inputs():
    return [num_channels]
