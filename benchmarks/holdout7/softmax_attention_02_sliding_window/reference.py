import torch
import torch.nn as nn


class Model(nn.Module):
    """Local (sliding-window) self-attention.

    Query i attends to every key j with |i - j| <= window (a band around the diagonal); scores are scaled by
    1/sqrt(head_dim) and normalised with a softmax over the keys.
    """

    def __init__(self, window: int = 4) -> None:
        super().__init__()
        self.window = window

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        S = q.shape[-2]
        pos = torch.arange(S, device=q.device)
        band = (pos[:, None] - pos[None, :]).abs() <= self.window
        scale = q.shape[-1] ** -0.5
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        scores = scores.masked_fill(~band, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        return torch.matmul(attn, v)


B = 2
H = 2
S = 40
D = 24


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)]


def get_init_inputs():
    return [6]
