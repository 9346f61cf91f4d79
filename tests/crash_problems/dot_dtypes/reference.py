import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b.float()


M = 20
K = 36
N = 24


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N).half()]


def get_init_inputs():
    return []
