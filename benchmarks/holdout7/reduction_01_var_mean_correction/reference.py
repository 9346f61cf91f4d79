import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.var_mean over one axis of a 3-D tensor with an explicit correction.

    Returns (var, mean), var = sum((x - mean)^2) / (N - correction).
    """

    def __init__(self, dim: int = -1, correction: int = 1, keepdim: bool = False) -> None:
        super().__init__()
        self.dim = dim
        self.correction = correction
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor):
        return torch.var_mean(x, dim=self.dim, correction=self.correction, keepdim=self.keepdim)


B = 4
L = 48
D = 40


def get_inputs():
    return [torch.randn(B, L, D)]


def get_init_inputs():
    return [1, 2, False]
