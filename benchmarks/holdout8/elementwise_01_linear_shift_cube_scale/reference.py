import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear -> subtract a learned per-feature shift -> integer power -> scale."""

    def __init__(self, in_features: int, out_features: int, exponent: int, scale: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.shift = nn.Parameter(torch.randn(out_features) * 0.2)
        self.exponent = exponent
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        y = y - self.shift
        y = torch.pow(y, self.exponent)
        return y * self.scale


batch_size = 4
seq_len = 12
in_features = 32
out_features = 24
exponent = 3
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, seq_len, in_features)]


def get_init_inputs():
    return [in_features, out_features, exponent, scale]
