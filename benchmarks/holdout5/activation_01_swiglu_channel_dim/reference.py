import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SwiGLU gate over the channel dimension of a (batch, 2 * hidden, length) activation.

    The input is split in two halves along `dim`: the first half is the gate, the second the value;
    the output is silu(gate) * value, with `hidden` channels.
    """

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, value = x.chunk(2, dim=self.dim)
        return F.silu(gate) * value


batch_size = 4
hidden = 48
seq_len = 20


def get_inputs():
    return [torch.randn(batch_size, 2 * hidden, seq_len)]


def get_init_inputs():
    return [1]
