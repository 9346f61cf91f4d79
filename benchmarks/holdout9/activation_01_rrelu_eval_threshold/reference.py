import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Randomized leaky ReLU in inference mode (fixed slope (lower + upper) / 2),
    followed by F.threshold: values not above `threshold` are replaced by `value`."""

    def __init__(self, lower: float = 0.125, upper: float = 0.375,
                 threshold: float = -0.15, value: float = -0.6) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.threshold = threshold
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.rrelu(x, lower=self.lower, upper=self.upper, training=False)
        return F.threshold(y, self.threshold, self.value)


batch_size = 8
channels = 12
length = 40


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [0.125, 0.375, -0.15, -0.6]
