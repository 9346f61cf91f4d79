import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.repeat_interleave(x, repeats, dim=dim) with a per-element repeats tensor.

    Column j of x is copied repeats[j] times (zero repeats drop the column).
    """

    def __init__(self, dim: int = 0) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, repeats: torch.Tensor) -> torch.Tensor:
        return torch.repeat_interleave(x, repeats, dim=self.dim)


B = 24
N = 37
MAX_REPEATS = 4


def get_inputs():
    x = torch.randn(B, N)
    repeats = torch.randint(0, MAX_REPEATS, (N,), dtype=torch.int64)
    return [x, repeats]


def get_init_inputs():
    return [1]
