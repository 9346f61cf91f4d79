import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, then subtract a constant, multiply by a constant and apply ReLU."""

    def __init__(self, in_features: int, out_features: int, subtract_value: float, multiply_value: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x - self.subtract_value
        x = x * self.multiply_value
        x = torch.relu(x)
        return x


batch_size = 32
in_features = 64
out_features = 48
subtract_value = 0.25
multiply_value = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, subtract_value, multiply_value]
