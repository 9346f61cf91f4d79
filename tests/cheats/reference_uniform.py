import torch
import torch.nn as nn


class Model(nn.Module):
    """Scale by two, tested by default on uniform inputs (which hide kernels that do part of the work)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


rows = 4
n = 512


def get_inputs():
    return [torch.ones(rows, n)]


def get_init_inputs():
    return []
