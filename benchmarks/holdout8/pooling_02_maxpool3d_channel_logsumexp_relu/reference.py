import torch
import torch.nn as nn


class Model(nn.Module):
    """MaxPool3d, then logsumexp over the channel dim (keepdim), then ReLU."""

    def __init__(self, kernel_size: int, stride: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(x)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = torch.relu(x)
        return x


batch_size = 2
channels = 8
depth = 8
height = 12
width = 12
kernel_size = 2
stride = 2


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [kernel_size, stride]
