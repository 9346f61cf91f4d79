import torch
import torch.nn as nn


class Model(nn.Module):
    """Temperature-scaled log-softmax over the vocabulary axis (sampling / distillation logits)."""

    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(logits / self.temperature, dim=-1)


batch_size = 4
seq_len = 6
vocab_size = 300


def get_inputs():
    return [torch.randn(batch_size, seq_len, vocab_size)]


def get_init_inputs():
    return [0.7]
