import torch
import torch.nn as nn


class Model(nn.Module):
    """Group Normalization over a (N, C, H, W) activation."""

    def __init__(self, num_groups: int, num_features: int, eps: float) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 4
num_groups = 4
channels_per_group = 3
features = num_groups * channels_per_group
height = 10
width = 13
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, features, height, width)]


def get_init_inputs():
    return [num_groups, features, eps]
