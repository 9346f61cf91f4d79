import torch
import torch.nn as nn


class Model(nn.Module):
    """Cross-entropy over class logits; targets equal to ignore_index are left out of the mean."""

    def __init__(self, ignore_index: int) -> None:
        super().__init__()
        self.criterion = nn.CrossEntropyLoss(ignore_index=ignore_index)

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.criterion(logits, targets)


batch_size = 64
num_classes = 200
ignore_index = -100


def get_inputs():
    logits = torch.randn(batch_size, num_classes)
    targets = torch.randint(0, num_classes, (batch_size,))
    # roughly one target in five is padding
    targets[torch.rand(batch_size) < 0.2] = ignore_index
    return [logits, targets]


def get_init_inputs():
    return [ignore_index]
