import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LayerNorm over the last two dimensions (H, W) of a (N, C, H, W) tensor, with a per-element affine
    transform of shape (H, W)."""

    def __init__(self, height: int, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.normalized_shape = (height, width)
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(height, width))
        self.bias = nn.Parameter(0.5 * torch.randn(height, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


batch_size = 4
channels = 6
height = 12
width = 20


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [height, width]
