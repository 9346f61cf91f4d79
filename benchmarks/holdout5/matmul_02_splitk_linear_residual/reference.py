import torch
import torch.nn as nn


class Model(nn.Module):
    """Output projection of a transformer block: y = x @ W^T + b + residual."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.proj(x) + residual


batch_size = 3
seq_len = 16
in_features = 64
out_features = 48


def get_inputs():
    x = torch.randn(batch_size, seq_len, in_features)
    residual = torch.randn(batch_size, seq_len, out_features)
    return [x, residual]


def get_init_inputs():
    return [in_features, out_features]
