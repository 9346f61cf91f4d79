import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Scaled dot-product attention with a boolean key-padding mask and an explicit softmax scale."""

    def __init__(self, scale: float = 0.2) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_keep: torch.Tensor) -> torch.Tensor:
        # key_keep: (B, S) bool, True = the key takes part in attention
        attn_mask = key_keep[:, None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=0.0, scale=self.scale)


batch_size = 2
num_heads = 3
q_len = 20
kv_len = 24
head_dim = 16


def get_inputs():
    q = torch.randn(batch_size, num_heads, q_len, head_dim)
    k = torch.randn(batch_size, num_heads, kv_len, head_dim)
    v = torch.randn(batch_size, num_heads, kv_len, head_dim)
    key_keep = torch.rand(batch_size, kv_len) > 0.3
    key_keep[:, 0] = True  # no fully padded query row
    return [q, k, v, key_keep]


def get_init_inputs():
    return [0.2]
