import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


batch = 2
seq = 3
hidden = 40


def get_inputs():
    return [torch.randn(batch, seq, hidden), torch.randn(hidden)]


def get_init_inputs():
    return []
