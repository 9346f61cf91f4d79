import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.addcdiv(input, tensor1, tensor2, value=value) with broadcast operands.

    out = input + value * tensor1 / tensor2
    input is a (N,) bias row, tensor1 a (M, 1) per-row numerator, tensor2 the full (M, N) denominator.
    """

    def __init__(self, value: float = 1.0) -> None:
        super().__init__()
        self.value = value

    def forward(self, input: torch.Tensor, tensor1: torch.Tensor, tensor2: torch.Tensor) -> torch.Tensor:
        return torch.addcdiv(input, tensor1, tensor2, value=self.value)


M = 48
N = 40


def get_inputs():
    denom = torch.rand(M, N) + 0.5
    return [torch.randn(N), torch.randn(M, 1), denom]


def get_init_inputs():
    return [-0.6]
