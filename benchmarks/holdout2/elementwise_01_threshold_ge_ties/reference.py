import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Threshold: y = x if x > threshold else value."""

    def __init__(self, threshold: float = 1.0, value: float = -2.0) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.threshold(x, self.threshold, self.value)


batch_size = 16
dim = 900


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.0, -2.0]
