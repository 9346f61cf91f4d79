import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.addcmul(input, tensor1, tensor2, value=value), tensor2 broadcast along the rows.

    out = input + value * tensor1 * tensor2
    """

    def __init__(self, value: float = 0.5) -> None:
        super().__init__()
        self.value = value

    def forward(self, input: torch.Tensor, tensor1: torch.Tensor, tensor2: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(input, tensor1, tensor2, value=self.value)


M = 32
N = 256


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, N), torch.randn(N)]


def get_init_inputs():
    return [-0.75]
