import torch
import torch.nn as nn


class Model(nn.Module):
    """Log-sum-exp over the sample axis (dim 0): pools a stack of per-sample scores into one score per
    feature, e.g. the log-partition over an ensemble of logits."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(scores, dim=0)


num_samples = 100
features = 96


def get_inputs():
    return [torch.randn(num_samples, features)]


def get_init_inputs():
    return []
