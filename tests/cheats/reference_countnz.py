import torch
import torch.nn as nn


class Model(nn.Module):
    """How many entries of each row are set (not zero)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x != 0).sum(dim=-1)


rows = 6
n = 700


def get_inputs():
    return [torch.randint(0, 3, (rows, n)).float()]


def get_init_inputs():
    return []
