import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Temperature-scaled cross-entropy with per-class weights (mean reduction)."""

    def __init__(self, num_classes: int, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature
        self.register_buffer("class_weight", torch.rand(num_classes) + 0.5)

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits / self.temperature, targets, weight=self.class_weight)


batch_size = 16
num_classes = 100
temperature = 2.0


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return [num_classes, temperature]
