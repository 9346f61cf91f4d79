import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer followed by LeakyReLU with a configurable negative slope."""

    def __init__(self, in_features: int, out_features: int, negative_slope: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 40
in_features = 48
out_features = 56
negative_slope = 0.2


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, negative_slope]
