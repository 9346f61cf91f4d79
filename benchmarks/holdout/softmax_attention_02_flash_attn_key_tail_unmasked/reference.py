import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Scaled dot-product attention, no mask, default scale 1/sqrt(head_dim)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


batch_size = 1
num_heads = 2
head_dim = 16
seq_len = 32


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
