import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.nanmean along one dimension: the mean of the non-NaN entries."""

    def __init__(self, dim: int = -1, keepdim: bool = False) -> None:
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nanmean(x, dim=self.dim, keepdim=self.keepdim)


M = 64
N = 96


def get_inputs():
    x = torch.randn(M, N)
    # about 15% missing values
    x[torch.rand(M, N) < 0.15] = float("nan")
    return [x]


def get_init_inputs():
    return [0, True]
