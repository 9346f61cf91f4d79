import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.nn.functional.softplus(input, beta=beta, threshold=threshold)."""

    def __init__(self, beta: float = 2.0, threshold: float = 3.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.softplus(input, beta=self.beta, threshold=self.threshold)


B = 4
T = 24
D = 160


def get_inputs():
    return [torch.randn(B, T, D)]


def get_init_inputs():
    return [2.0, 3.0]
