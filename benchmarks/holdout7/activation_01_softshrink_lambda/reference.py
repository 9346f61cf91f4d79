import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.softshrink(x, lambd): x - lambd above lambd, x + lambd below -lambd, 0 in between."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softshrink(x, lambd=self.lambd)


BATCH = 16
FEATURES = 384


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [0.3]
