import torch
import torch.nn as nn


class Model(nn.Module):
    """Huber loss with delta = 2, mean reduction."""

    def __init__(self, delta: float) -> None:
        super().__init__()
        self.loss = nn.HuberLoss(delta=delta)

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.loss(predictions, targets)


batch_size = 16
dim = 128
delta = 2.0


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [delta]
