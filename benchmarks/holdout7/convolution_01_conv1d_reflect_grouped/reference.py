import torch
import torch.nn as nn


class Model(nn.Module):
    """Grouped temporal convolution block with reflect padding (speech/audio front-end style).

    A 'same'-length grouped Conv1d whose borders are reflect-padded, followed by a learned
    per-channel scale (as in a ConvNeXt-1D / TasNet encoder stage).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, groups: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            in_channels, out_channels, kernel_size,
            padding=kernel_size // 2, padding_mode="reflect", groups=groups, bias=True,
        )
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x) * self.scale[None, :, None]


BATCH = 3
C_IN = 4
C_OUT = 6
KSIZE = 5
GROUPS = 2
LENGTH = 50


def get_inputs():
    return [torch.randn(BATCH, C_IN, LENGTH)]


def get_init_inputs():
    return [C_IN, C_OUT, KSIZE, GROUPS]
