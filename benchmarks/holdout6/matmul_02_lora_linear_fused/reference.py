import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A LoRA-adapted linear layer (after some fine-tuning, so lora_B is not zero):

        y = x W^T + b + (alpha / r) * (x A^T) B^T
    """

    def __init__(self, in_features: int, out_features: int, r: int = 4, lora_alpha: float = 16.0) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.r = r
        self.lora_alpha = lora_alpha
        self.scaling = lora_alpha / r
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / math.sqrt(in_features))
        self.bias = nn.Parameter(0.1 * torch.randn(out_features))
        self.lora_A = nn.Parameter(torch.randn(r, in_features) / math.sqrt(in_features))
        self.lora_B = nn.Parameter(0.5 * torch.randn(out_features, r))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result = F.linear(x, self.weight, self.bias)
        result = result + (x @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling
        return result


batch_size = 2
seq_len = 24
in_features = 48
out_features = 40
rank = 4


def get_inputs():
    return [torch.randn(batch_size, seq_len, in_features)]


def get_init_inputs():
    return [in_features, out_features, rank, 16.0]
