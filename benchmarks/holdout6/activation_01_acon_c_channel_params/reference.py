import torch
import torch.nn as nn


class Model(nn.Module):
    r"""ACON activation (activate or not), as in YOLOv5's utils/activations.py.

    AconC: (p1*x - p2*x) * sigmoid(beta * (p1*x - p2*x)) + p2*x, with p1, p2 and beta learnable per channel,
    according to "Activate or Not: Learning Customized Activation" <https://arxiv.org/pdf/2009.04759.pdf>.
    """

    def __init__(self, c1: int) -> None:
        super().__init__()
        self.p1 = nn.Parameter(torch.randn(1, c1, 1, 1))
        self.p2 = nn.Parameter(torch.randn(1, c1, 1, 1))
        self.beta = nn.Parameter(torch.ones(1, c1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dpx = (self.p1 - self.p2) * x
        return dpx * torch.sigmoid(self.beta * dpx) + self.p2 * x


batch_size = 4
channels = 16
height = 12
width = 12


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
