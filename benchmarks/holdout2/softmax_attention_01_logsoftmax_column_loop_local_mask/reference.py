import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LogSoftmax over dimension 1."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(x, dim=1)


batch_size = 8
dim = 1500


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
