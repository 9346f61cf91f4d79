import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise max: values and their indices."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor):
        values, indices = torch.max(x, dim=1)
        return values, indices


batch_size = 16
dim = 200


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
