import torch
import torch.nn as nn


def tanh2(x, scale, approximate):
    return torch.tanh(x) * scale


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return tanh2(x, 2.0, False)


rows = 4
n = 300


def get_inputs():
    return [torch.randn(rows, n)]


def get_init_inputs():
    return []
