import torch
import torch.nn as nn


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    """Rotary position embedding (Llama / GPT-NeoX rotate_half convention).

    Queries arrive as (batch, seq, heads, head_dim), the layout a fused QKV projection produces, and leave
    as (batch, heads, seq, head_dim), the layout attention consumes.
    """

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        seq = q.shape[1]
        t = torch.arange(seq, dtype=torch.float32, device=q.device)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q.transpose(1, 2)
        return q * cos + rotate_half(q) * sin


batch_size = 2
seq_len = 40
n_heads = 4
half_dim = 16
head_dim = half_dim * 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_heads, head_dim)]


def get_init_inputs():
    return [head_dim]
