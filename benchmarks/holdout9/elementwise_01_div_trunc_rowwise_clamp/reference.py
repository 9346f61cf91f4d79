import torch
import torch.nn as nn


class Model(nn.Module):
    """Rounded division by a per-row divisor (broadcast over the batch and the
    last dim), then clamped to [-bound, bound]."""

    def __init__(self, rounding_mode: str = "trunc", bound: float = 6.0) -> None:
        super().__init__()
        self.rounding_mode = rounding_mode
        self.bound = bound

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        q = torch.div(x, y, rounding_mode=self.rounding_mode)
        return torch.clamp(q, min=-self.bound, max=self.bound)


batch_size = 4
rows = 12
cols = 40


def get_inputs():
    x = torch.randn(batch_size, rows, cols) * 3.0
    y = torch.rand(rows, 1) + 0.5
    return [x, y]


def get_init_inputs():
    return ["trunc", 6.0]
