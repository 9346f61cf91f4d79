import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Margin ranking loss between two score matrices with a +-1 preference label."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__()
        self.margin = margin
        self.reduction = reduction

    def forward(self, scores_a: torch.Tensor, scores_b: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        return F.margin_ranking_loss(scores_a, scores_b, label, margin=self.margin, reduction=self.reduction)


num_queries = 8
num_pairs = 300


def get_inputs():
    a = torch.randn(num_queries, num_pairs)
    b = torch.randn(num_queries, num_pairs)
    label = torch.randint(0, 2, (num_queries, num_pairs)).float() * 2 - 1
    return [a, b, label]


def get_init_inputs():
    return [0.5, "mean"]
