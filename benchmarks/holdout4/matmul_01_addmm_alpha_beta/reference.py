import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled matrix multiply with an additive term: beta * input + alpha * (mat1 @ mat2)."""

    def __init__(self, alpha: float, beta: float) -> None:
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, input: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
        return torch.addmm(input, mat1, mat2, beta=self.beta, alpha=self.alpha)


M = 48
K = 64
N = 40


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return [0.5, 2.0]
