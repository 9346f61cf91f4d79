import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Grouped-query attention: each K/V head serves n_heads // n_kv_heads consecutive query heads."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        group = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        return F.scaled_dot_product_attention(q, k, v)


batch_size = 2
n_heads = 4
n_kv_heads = 2
seq_len = 40
head_dim = 16


def get_inputs():
    q = torch.randn(batch_size, n_heads, seq_len, head_dim)
    k = torch.randn(batch_size, n_kv_heads, seq_len, head_dim)
    v = torch.randn(batch_size, n_kv_heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return []
