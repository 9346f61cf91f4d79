import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """KL(target || prediction) between two softmax distributions, batchmean reduction."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, pred_logits: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
        log_pred = F.log_softmax(pred_logits, dim=-1)
        target = F.softmax(target_logits, dim=-1)
        return F.kl_div(log_pred, target, reduction="batchmean")


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
