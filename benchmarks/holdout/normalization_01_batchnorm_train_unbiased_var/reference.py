import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm2d as called on a freshly built module (training mode: batch statistics)."""

    def __init__(self, num_features: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 4
num_features = 6
height = 10
width = 10


def get_inputs():
    return [torch.randn(batch_size, num_features, height, width)]


def get_init_inputs():
    return [num_features]
