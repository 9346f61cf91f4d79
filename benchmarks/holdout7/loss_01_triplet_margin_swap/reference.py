import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.triplet_margin_loss with the distance swap (Balntas et al.) and mean reduction."""

    def __init__(self, margin: float = 1.0, swap: bool = False) -> None:
        super().__init__()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=2.0, swap=self.swap)


BATCH = 32
EMBED = 200


def get_inputs():
    anchor = torch.randn(BATCH, EMBED)
    positive = anchor + 0.5 * torch.randn(BATCH, EMBED)
    negative = anchor + 0.6 * torch.randn(BATCH, EMBED)
    return [anchor, positive, negative]


def get_init_inputs():
    return [1.5, True]
