import torch
import torch.nn as nn


class Model(nn.Module):
    """Softplus with a configurable beta and linearisation threshold (torch.nn.Softplus)."""

    def __init__(self, beta: float, threshold: float) -> None:
        super().__init__()
        self.softplus = nn.Softplus(beta=beta, threshold=threshold)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softplus(x)


batch_size = 8
dim = 1000
beta = 2.0
threshold = 4.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta, threshold]
