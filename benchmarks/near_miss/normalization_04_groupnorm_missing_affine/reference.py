import torch
import torch.nn as nn


class Model(nn.Module):
    """GroupNorm with a learned (non-identity) affine transform."""

    def __init__(self, num_groups: int, num_channels: int) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels)
        with torch.no_grad():
            self.gn.weight.uniform_(0.5, 1.5)
            self.gn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 4
num_groups = 3
channels = 6
length = 100


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [num_groups, channels]
