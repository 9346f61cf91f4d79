import torch
import torch.nn as nn


class Model(nn.Module):
    """addmv: out = beta * input + alpha * (mat @ vec)."""

    def __init__(self, beta: float = 0.75, alpha: float = -1.25) -> None:
        super().__init__()
        self.beta = beta
        self.alpha = alpha

    def forward(self, input: torch.Tensor, mat: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
        return torch.addmv(input, mat, vec, beta=self.beta, alpha=self.alpha)


rows = 60
cols = 200


def get_inputs():
    return [torch.randn(rows), torch.randn(rows, cols), torch.randn(cols)]


def get_init_inputs():
    return [0.75, -1.25]
