import torch
import torch.nn as nn


class Model(nn.Module):
    """Gemm -> residual add with alpha (torch.add) -> per-feature gate multiply."""

    def __init__(self, in_features: int, out_features: int, alpha: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gate = nn.Parameter(torch.randn(out_features))
        self.alpha = alpha

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        y = torch.add(residual, y, alpha=self.alpha)
        return y * self.gate


batch_size = 16
in_features = 40
out_features = 48
alpha = 0.25


def get_inputs():
    return [torch.randn(batch_size, in_features), torch.randn(batch_size, out_features)]


def get_init_inputs():
    return [in_features, out_features, alpha]
