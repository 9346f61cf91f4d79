import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled attention scores with an additive bias: beta * bias + alpha * (q @ k^T), per batch."""

    def __init__(self, alpha: float, beta: float) -> None:
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, bias: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(bias, q, k.transpose(1, 2), beta=self.beta, alpha=self.alpha)


batch_size = 2
head_dim = 48
seq_q = 40
seq_k = 56

ALPHA = 0.125
BETA = 0.5


def get_inputs():
    bias = torch.randn(batch_size, seq_q, seq_k)
    q = torch.randn(batch_size, seq_q, head_dim)
    k = torch.randn(batch_size, seq_k, head_dim)
    return [bias, q, k]


def get_init_inputs():
    return [ALPHA, BETA]
