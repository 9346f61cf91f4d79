import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled dot-product attention with an additive (relative-position style) bias shared by all heads."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale + bias
        probs = torch.softmax(scores, dim=-1)
        return torch.matmul(probs, v)


batch_size = 2
num_heads = 2
head_dim = 16
q_len = 24
kv_len = 40


def get_inputs():
    q = torch.randn(batch_size, num_heads, q_len, head_dim)
    k = torch.randn(batch_size, num_heads, kv_len, head_dim)
    v = torch.randn(batch_size, num_heads, kv_len, head_dim)
    bias = torch.randn(q_len, kv_len)
    return [q, k, v, bias]


def get_init_inputs():
    return [0.25]
