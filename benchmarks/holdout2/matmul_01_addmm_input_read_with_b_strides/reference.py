import torch
import torch.nn as nn


class Model(nn.Module):
    """addmm: beta * input + alpha * (a @ b)."""

    def __init__(self, beta: float = 0.5, alpha: float = 2.0) -> None:
        super().__init__()
        self.beta = beta
        self.alpha = alpha

    def forward(self, inp: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.addmm(inp, a, b, beta=self.beta, alpha=self.alpha)


M = 48
K = 40
N = 56


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return [0.5, 2.0]
