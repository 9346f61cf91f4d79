import torch
import torch.nn as nn


class Model(nn.Module):
    """Gemm, sigmoid, scaling, then a sum over the features (keepdim)."""

    def __init__(self, input_size: int, hidden_size: int, scaling_factor: float) -> None:
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.sigmoid(x)
        x = x * self.scaling_factor
        x = torch.sum(x, dim=1, keepdim=True)
        return x


batch_size = 24
input_size = 40
hidden_size = 48
scaling_factor = 0.75


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]
