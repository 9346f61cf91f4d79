import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.bilinear: out[b, o] = sum_{i, j} x1[b, i] * weight[o, i, j] * x2[b, j] + bias[o]."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.bilinear(x1, x2, weight, bias)


BATCH = 24
IN1 = 20
IN2 = 28
OUT = 12


def get_inputs():
    return [
        torch.randn(BATCH, IN1),
        torch.randn(BATCH, IN2),
        torch.randn(OUT, IN1, IN2) * 0.2,
        torch.randn(OUT),
    ]


def get_init_inputs():
    return []
