import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """silu(group_norm(x, num_groups, weight, bias, eps)): the GroupNorm + SiLU pair of a diffusion UNet block."""

    def __init__(self, num_groups: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_groups = num_groups
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        y = F.group_norm(x, num_groups=self.num_groups, weight=weight, bias=bias, eps=self.eps)
        return F.silu(y)


batch_size = 2
num_groups = 2
channels_per_group = 4
channels = num_groups * channels_per_group
height = 10
width = 10


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    weight = torch.randn(channels)
    bias = torch.randn(channels)
    return [x, weight, bias]


def get_init_inputs():
    return [num_groups, 1e-5]
