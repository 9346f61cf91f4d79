import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched add-matmul with the second operand stored row-major as (batch, n, k):

        out = beta * input + alpha * (batch1 @ batch2.transpose(1, 2))

    i.e. torch.baddbmm on an "NT" product, as used for similarity scores with an additive bias.
    """

    def __init__(self, alpha: float = 0.5, beta: float = 2.0) -> None:
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, input: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(input, batch1, batch2.transpose(1, 2), beta=self.beta, alpha=self.alpha)


batch = 3
m = 40
n = 56
k = 48


def get_inputs():
    return [torch.randn(batch, m, n), torch.randn(batch, m, k), torch.randn(batch, n, k)]


def get_init_inputs():
    return [0.5, 2.0]
