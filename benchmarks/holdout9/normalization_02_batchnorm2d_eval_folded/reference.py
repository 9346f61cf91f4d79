import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """BatchNorm2d in inference mode: normalises with the running statistics
    (training=False), then applies the per-channel affine weight and bias."""

    def __init__(self, num_features: int = 80, eps: float = 1e-3, momentum: float = 0.1) -> None:
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.weight = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))
        self.register_buffer("running_mean", torch.randn(num_features))
        self.register_buffer("running_var", torch.rand(num_features) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias,
            training=False, momentum=self.momentum, eps=self.eps,
        )


batch_size = 4
channels = 80
height = 6
width = 10


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, 1e-3, 0.1]
