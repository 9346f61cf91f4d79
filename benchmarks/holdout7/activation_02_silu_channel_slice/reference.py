import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Partial SiLU: the first `active_channels` channels go through F.silu, the rest pass through.

    Used in some mobile backbones to keep an identity path inside a block without a split/concat.
    """

    def __init__(self, active_channels: int = 8) -> None:
        super().__init__()
        self.active_channels = active_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.active_channels
        return torch.cat([F.silu(x[:, :k]), x[:, k:]], dim=1)


BATCH = 4
CHANNELS = 12
HEIGHT = 16
WIDTH = 16


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [5]
