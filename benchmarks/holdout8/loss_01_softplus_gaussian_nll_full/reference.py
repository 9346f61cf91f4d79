import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Heteroscedastic regression loss: the variance head goes through softplus,
    then Gaussian negative log-likelihood (mean reduction)."""

    def __init__(self, full: bool = False, eps: float = 1e-6) -> None:
        super().__init__()
        self.nll = nn.GaussianNLLLoss(full=full, eps=eps, reduction="mean")

    def forward(self, mu: torch.Tensor, target: torch.Tensor, raw_var: torch.Tensor) -> torch.Tensor:
        var = F.softplus(raw_var)
        return self.nll(mu, target, var)


batch_size = 8
num_outputs = 64


def get_inputs():
    return [
        torch.randn(batch_size, num_outputs),
        torch.randn(batch_size, num_outputs),
        torch.randn(batch_size, num_outputs),
    ]


def get_init_inputs():
    return [True, 1e-2]
