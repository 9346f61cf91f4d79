import torch
import torch.nn as nn


class Model(nn.Module):
    """Gated residual update: out = x + value * t1 * gate.

    x and t1 are (batch, channels, length); the gate is (batch, 1, length) and broadcasts over channels.
    """

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor, t1: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(x, t1, gate, value=self.value)


batch_size = 4
channels = 12
length = 160
value = 0.75


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    t1 = torch.randn(batch_size, channels, length)
    gate = torch.randn(batch_size, 1, length)
    return [x, t1, gate]


def get_init_inputs():
    return [value]
