import torch
import torch.nn as nn


class Model(nn.Module):
    """logit with eps: log(z / (1 - z)), z = clamp(x, eps, 1 - eps)."""

    def __init__(self, eps: float = 1e-3) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logit(x, eps=self.eps)


batch_size = 12
dim = 640


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return [1e-3]
