import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.nn.functional.cosine_embedding_loss(input1, input2, target, margin=margin, reduction=reduction)"""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__()
        self.margin = margin
        self.reduction = reduction

    def forward(self, input1: torch.Tensor, input2: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


batch_size = 48
embed_dim = 200


def get_inputs():
    input1 = torch.randn(batch_size, embed_dim)
    input2 = torch.randn(batch_size, embed_dim)
    target = torch.randint(0, 2, (batch_size,)) * 2 - 1
    return [input1, input2, target]


def get_init_inputs():
    return [0.2, "mean"]
