import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Multi-head scaled dot-product attention (no mask, no dropout), default 1/sqrt(head_dim) scale."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


batch_size = 2
num_heads = 2
seq_len = 48
head_dim = 24


def get_inputs():
    q = torch.randn(batch_size, num_heads, seq_len, head_dim)
    k = torch.randn(batch_size, num_heads, seq_len, head_dim)
    v = torch.randn(batch_size, num_heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return []
