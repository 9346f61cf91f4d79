import torch
import torch.nn as nn


class Model(nn.Module):
    """Attention probabilities: scaled scores, padded keys masked out, softmax over the keys."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
        scores = scores * self.scale
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1)


batch_size = 2
num_heads = 3
q_len = 24
k_len = 40


def get_inputs():
    scores = torch.randn(batch_size, num_heads, q_len, k_len)
    lengths = torch.randint(k_len - k_len // 4, k_len + 1, (batch_size,))
    key_padding_mask = torch.arange(k_len)[None, :] >= lengths[:, None]
    return [scores, key_padding_mask]


def get_init_inputs():
    return [0.125]
