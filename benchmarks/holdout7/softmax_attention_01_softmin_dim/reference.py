import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.softmin over a chosen dimension of a 3-D tensor.

    softmin(x) = softmax(-x) along ``dim``.
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softmin(x, dim=self.dim)


B = 4
C = 20
L = 24


def get_inputs():
    return [torch.randn(B, C, L)]


def get_init_inputs():
    return [1]
