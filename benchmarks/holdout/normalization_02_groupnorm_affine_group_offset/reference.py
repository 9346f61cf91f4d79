import torch
import torch.nn as nn


class Model(nn.Module):
    """GroupNorm with a learned per-channel affine (initialised away from the identity)."""

    def __init__(self, num_groups: int, num_channels: int) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels)
        with torch.no_grad():
            self.gn.weight.uniform_(0.5, 1.5)
            self.gn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 2
num_groups = 4
channels_per_group = 2
height = 8
width = 8
num_channels = num_groups * channels_per_group


def get_inputs():
    return [torch.randn(batch_size, num_channels, height, width)]


def get_init_inputs():
    return [num_groups, num_channels]
