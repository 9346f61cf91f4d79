import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Hardtanh: clamp to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


batch_size = 8
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim) * 2]


def get_init_inputs():
    return [-0.5, 1.5]
