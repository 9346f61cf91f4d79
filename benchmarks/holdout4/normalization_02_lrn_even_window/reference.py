import torch
import torch.nn as nn


class Model(nn.Module):
    """Local Response Normalization across channels (AlexNet-style), even window."""

    def __init__(self, size: int, alpha: float, beta: float, k: float) -> None:
        super().__init__()
        self.lrn = nn.LocalResponseNorm(size=size, alpha=alpha, beta=beta, k=k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lrn(x)


batch_size = 2
channels = 16
height = 6
width = 20


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [4, 1e-2, 0.75, 1.0]
