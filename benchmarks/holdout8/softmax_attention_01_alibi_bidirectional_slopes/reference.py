import math

import torch
import torch.nn as nn


def _alibi_slopes(n_heads: int):
    """Head slopes from the ALiBi paper (with the interleaving rule for non power-of-two head counts)."""

    def _pow2(n):
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return _pow2(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return _pow2(closest) + _alibi_slopes(2 * closest)[0::2][: n_heads - closest]


class Model(nn.Module):
    """Bidirectional multi-head self-attention with a symmetric ALiBi bias: qkv projection,
    softmax(q k^T / sqrt(d) - m_h * |i - j|) v, output projection."""

    def __init__(self, num_heads: int, head_dim: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim
        embed_dim = num_heads * head_dim
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.register_buffer("slopes", torch.tensor(_alibi_slopes(num_heads), dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, S, E = x.shape
        qkv = self.qkv(x).reshape(B, S, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        pos = torch.arange(S, device=x.device)
        dist = (pos[None, :] - pos[:, None]).abs().to(x.dtype)
        bias = -self.slopes.view(-1, 1, 1) * dist
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + bias
        attn = torch.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, S, E)
        return self.proj(out)


batch_size = 2
seq_len = 20
num_heads = 6
head_dim = 16


def get_inputs():
    return [torch.randn(batch_size, seq_len, num_heads * head_dim)]


def get_init_inputs():
    return [num_heads, head_dim]
