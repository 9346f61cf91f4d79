import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mean absolute error."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.l1_loss(predictions, targets)


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
