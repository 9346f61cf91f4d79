import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Multi-label binary cross-entropy on logits with a per-class positive weight (mean reduction)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.register_buffer("pos_weight", torch.linspace(0.5, 3.0, num_classes))

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits, targets, pos_weight=self.pos_weight)


batch_size = 24
num_classes = 48


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 2.0
    targets = torch.rand(batch_size, num_classes)
    return [logits, targets]


def get_init_inputs():
    return [num_classes]
