import torch
import torch.nn as nn


class Model(nn.Module):
    """Cross-entropy over class logits; targets equal to ignore_index do not count."""

    def __init__(self) -> None:
        super().__init__()
        self.loss = nn.CrossEntropyLoss(ignore_index=-100)

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.loss(logits, targets)


batch_size = 16
num_classes = 32


def get_inputs():
    targets = torch.randint(0, num_classes, (batch_size,))
    targets[::4] = -100
    return [torch.randn(batch_size, num_classes), targets]


def get_init_inputs():
    return []
