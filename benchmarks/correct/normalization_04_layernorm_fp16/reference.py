import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm on half-precision activations (fp32 affine parameters)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(hidden))
            self.norm.bias.copy_(0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 32
hidden = 1536


def get_inputs():
    return [torch.randn(batch_size, hidden, dtype=torch.float16)]


def get_init_inputs():
    return [hidden]
