import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Multi-class hinge loss, F.multi_margin_loss with exponent p, margin and per-class weights.

    loss(x, y) = sum_{j != y} weight[y] * max(0, margin - x[y] + x[j]) ** p / C
    """

    def __init__(self, p: int = 1, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        self.p = p
        self.margin = margin
        self.reduction = reduction

    def forward(self, input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=weight,
                                   reduction=self.reduction)


N = 64
C = 10


def get_inputs():
    return [torch.randn(N, C), torch.randint(0, C, (N,)), torch.rand(C) + 0.5]


def get_init_inputs():
    return [2, 0.7, "sum"]
