import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm without affine parameters."""

    def __init__(self, normalized_shape: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, elementwise_affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 4
hidden = 1024


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
