import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv1d, then a causal running mean over time (cumsum / number of steps seen), then tanh."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        steps = torch.arange(1, y.shape[-1] + 1, device=y.device, dtype=y.dtype)
        y = torch.cumsum(y, dim=-1) / steps
        return torch.tanh(y)


batch_size = 4
in_channels = 4
out_channels = 8
length = 150
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
