import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale) with an explicit softmax scale."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True, scale=self.scale)


batch_size = 1
num_heads = 2
head_dim = 16
seq_len = 32


def get_inputs():
    q = torch.randn(batch_size, num_heads, seq_len, head_dim)
    k = torch.randn(batch_size, num_heads, seq_len, head_dim)
    v = torch.randn(batch_size, num_heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return [0.3]
