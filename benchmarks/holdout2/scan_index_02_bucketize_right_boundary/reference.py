import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.bucketize with right=False: index i such that boundaries[i-1] < x <= boundaries[i]."""

    def __init__(self, num_boundaries: int) -> None:
        super().__init__()
        self.register_buffer("boundaries", torch.linspace(-3.0, 3.0, num_boundaries))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.bucketize(x, self.boundaries)


batch_size = 16
dim = 500
num_boundaries = 13


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [num_boundaries]
