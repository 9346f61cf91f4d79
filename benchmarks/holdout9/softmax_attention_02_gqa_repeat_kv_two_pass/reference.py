import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Grouped-query attention: K/V heads are shared by groups of query heads (repeat_interleave), then SDPA."""

    def __init__(self, num_heads: int = 6, num_kv_heads: int = 2, is_causal: bool = False, scale: float = 0.15) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.is_causal = is_causal
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        group = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.is_causal, scale=self.scale)


batch_size = 2
n_heads = 6
n_kv_heads = 2
q_len = 16
kv_len = 40
head_dim = 16


def get_inputs():
    q = torch.randn(batch_size, n_heads, q_len, head_dim)
    k = torch.randn(batch_size, n_kv_heads, kv_len, head_dim)
    v = torch.randn(batch_size, n_kv_heads, kv_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return [n_heads, n_kv_heads, False, 0.15]
