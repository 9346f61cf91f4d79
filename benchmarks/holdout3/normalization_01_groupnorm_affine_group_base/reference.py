import torch
import torch.nn as nn


class Model(nn.Module):
    """GroupNorm over an NCHW activation, with a learned (non-trivial) per-channel affine."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels, eps=eps)
        with torch.no_grad():
            self.gn.weight.copy_(1.0 + 0.5 * torch.randn(num_channels))
            self.gn.bias.copy_(0.5 * torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 4
num_channels = 6
num_groups = 3
height = 12
width = 20


def get_inputs():
    return [torch.randn(batch_size, num_channels, height, width)]


def get_init_inputs():
    return [num_groups, num_channels]
