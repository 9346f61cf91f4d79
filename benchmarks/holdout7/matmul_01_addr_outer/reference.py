import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.addr: scaled outer product added to a scaled matrix.

    out = beta * input + alpha * outer(vec1, vec2)
    """

    def __init__(self, beta: float = 1.0, alpha: float = 1.0) -> None:
        super().__init__()
        self.beta = beta
        self.alpha = alpha

    def forward(self, input: torch.Tensor, vec1: torch.Tensor, vec2: torch.Tensor) -> torch.Tensor:
        return torch.addr(input, vec1, vec2, beta=self.beta, alpha=self.alpha)


M = 48
N = 40


def get_inputs():
    return [torch.randn(M, N), torch.randn(M), torch.randn(N)]


def get_init_inputs():
    return [0.5, -1.5]
