import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """MarginRankingLoss: mean(max(0, -y * (x1 - x2) + margin))."""

    def __init__(self, margin: float = 0.5) -> None:
        super().__init__()
        self.margin = margin

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.margin_ranking_loss(x1, x2, y, margin=self.margin)


n_elements = 3000


def get_inputs():
    y = torch.randint(0, 2, (n_elements,)).float() * 2 - 1
    return [torch.randn(n_elements), torch.randn(n_elements), y]


def get_init_inputs():
    return [0.5]
