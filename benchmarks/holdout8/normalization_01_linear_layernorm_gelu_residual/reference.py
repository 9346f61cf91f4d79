import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear -> LayerNorm -> GELU, plus a residual add of the pre-norm activations."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        z = self.norm(y)
        return F.gelu(z) + y


batch_size = 4
seq_len = 16
in_features = 40
out_features = 80
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, seq_len, in_features)]


def get_init_inputs():
    return [in_features, out_features, eps]
