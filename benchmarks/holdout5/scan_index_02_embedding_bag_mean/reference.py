import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """EmbeddingBag with mode='mean' over fixed-size bags: a gather of table rows followed by a per-bag mean."""

    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        # indices: (batch, bag) -> one bag per row
        return F.embedding_bag(indices, self.weight, mode="mean")


num_embeddings = 200
batch_size = 16
bag_size = 10
embedding_dim = 48


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, bag_size))]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
