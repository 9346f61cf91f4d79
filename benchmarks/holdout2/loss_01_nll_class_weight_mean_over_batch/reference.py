import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """NLL loss with per-class weights, reduction='mean'."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.register_buffer("weight", torch.linspace(0.2, 2.0, num_classes))

    def forward(self, log_probs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.nll_loss(log_probs, target, weight=self.weight)


batch_size = 64
num_classes = 10


def get_inputs():
    log_probs = torch.log_softmax(torch.randn(batch_size, num_classes), dim=1)
    target = torch.randint(0, num_classes, (batch_size,))
    return [log_probs, target]


def get_init_inputs():
    return [num_classes]
