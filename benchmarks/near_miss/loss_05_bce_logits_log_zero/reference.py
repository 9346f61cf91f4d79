import torch
import torch.nn as nn


class Model(nn.Module):
    """Binary cross-entropy on logits (mean reduction)."""

    def __init__(self) -> None:
        super().__init__()
        self.loss = nn.BCEWithLogitsLoss()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.loss(logits, targets)


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim), torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
