import torch
import torch.nn as nn


class Model(nn.Module):
    """Self-attention pooling (speaker / utterance embedding heads): a linear layer scores every frame, a
    softmax over the time axis turns the scores into weights, and the frames are summed with those weights.

    input:  batch_rep (N, T, H)
    output: utter_rep (N, H)
    """

    def __init__(self, input_dim: int) -> None:
        super().__init__()
        self.W = nn.Linear(input_dim, 1)

    def forward(self, batch_rep: torch.Tensor) -> torch.Tensor:
        softmax = nn.functional.softmax
        att_w = softmax(self.W(batch_rep).squeeze(-1), dim=-1).unsqueeze(-1)
        utter_rep = torch.sum(batch_rep * att_w, dim=1)
        return utter_rep


batch_size = 4
seq_len = 20
input_dim = 48


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_dim)]


def get_init_inputs():
    return [input_dim]
