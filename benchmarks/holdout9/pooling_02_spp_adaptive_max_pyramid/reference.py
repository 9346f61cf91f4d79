import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Spatial pyramid pooling: adaptive max pools at several grid sizes, flattened and concatenated."""

    def __init__(self, levels=(1, 2, 4)):
        super().__init__()
        self.levels = [int(l) for l in levels]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = [F.adaptive_max_pool2d(x, output_size=(l, l)).flatten(start_dim=1) for l in self.levels]
        return torch.cat(feats, dim=1)


batch_size = 2
channels = 4
height = 16
width = 12


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [(1, 2, 3)]
