import torch
import torch.nn as nn


class Model(nn.Module):
    """addbmm: beta * input + alpha * sum_b (batch1[b] @ batch2[b]).

    `input` is a 1-D vector of length N that broadcasts over the rows of the
    (M, N) result.
    """

    def __init__(self, beta: float = 0.5, alpha: float = 1.5) -> None:
        super().__init__()
        self.beta = beta
        self.alpha = alpha

    def forward(self, input: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor) -> torch.Tensor:
        return torch.addbmm(input, batch1, batch2, beta=self.beta, alpha=self.alpha)


batch = 4
M = 40
K = 64
N = 48


def get_inputs():
    return [torch.randn(N), torch.randn(batch, M, K), torch.randn(batch, K, N)]


def get_init_inputs():
    return [0.5, 1.5]
