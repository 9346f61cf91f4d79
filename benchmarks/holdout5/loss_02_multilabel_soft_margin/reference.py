import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-label one-versus-all loss based on max-entropy (MultiLabelSoftMarginLoss, reduction='mean')."""

    def __init__(self) -> None:
        super().__init__()
        self.loss_fn = nn.MultiLabelSoftMarginLoss()

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss_fn(logits, labels)


batch_size = 20
num_labels = 50


def get_inputs():
    logits = torch.randn(batch_size, num_labels)
    labels = torch.randint(0, 2, (batch_size, num_labels)).float()
    return [logits, labels]


def get_init_inputs():
    return []
