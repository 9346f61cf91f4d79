import torch
import torch.nn as nn


class Model(nn.Module):
    """Signed power sign(x) * |x|**p, then torch.add with the transpose of a
    second operand scaled by alpha."""

    def __init__(self, p: float = 1.5, alpha: float = -0.75) -> None:
        super().__init__()
        self.p = p
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        sp = torch.copysign(torch.abs(x).pow(self.p), x)
        return torch.add(sp, y.transpose(0, 1), alpha=self.alpha)


M = 48
N = 40


def get_inputs():
    return [torch.randn(M, N), torch.randn(N, M)]


def get_init_inputs():
    return [1.5, -0.75]
