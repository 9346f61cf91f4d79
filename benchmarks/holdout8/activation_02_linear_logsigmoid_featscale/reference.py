import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm -> LogSigmoid -> per-feature learned scale."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.feature_scale = nn.Parameter(torch.rand(out_features) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = F.logsigmoid(x)
        return x * self.feature_scale


batch_size = 16
in_features = 64
out_features = 48


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
