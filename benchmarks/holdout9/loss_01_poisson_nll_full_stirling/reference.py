import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Poisson negative log-likelihood loss (log-rate input, Stirling term, mean reduction)."""

    def __init__(self, log_input: bool = True, full: bool = True, eps: float = 1e-8, reduction: str = "mean") -> None:
        super().__init__()
        self.log_input = log_input
        self.full = full
        self.eps = eps
        self.reduction = reduction

    def forward(self, log_rate: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.poisson_nll_loss(
            log_rate, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )


batch_size = 16
num_bins = 200


def get_inputs():
    log_rate = torch.randn(batch_size, num_bins) * 0.5
    target = torch.poisson(torch.full((batch_size, num_bins), 1.5))
    return [log_rate, target]


def get_init_inputs():
    return [True, True, 1e-8, "mean"]
