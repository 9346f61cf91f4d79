import torch
import torch.nn as nn


def scale_rows(x, weight, eps):
    return x * weight + eps


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, weight):
        return scale_rows(x, weight, 1e-05)


rows = 4
n = 300


def get_inputs():
    return [torch.randn(rows, n), torch.randn(n)]


def get_init_inputs():
    return []
