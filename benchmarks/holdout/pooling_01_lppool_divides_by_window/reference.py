import torch
import torch.nn as nn


class Model(nn.Module):
    """Power-average pooling with p = 2, window 3, stride 2."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.LPPool1d(norm_type=2, kernel_size=3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 4
length = 64


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return []
