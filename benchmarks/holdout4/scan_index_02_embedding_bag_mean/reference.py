import torch
import torch.nn as nn


class Model(nn.Module):
    """EmbeddingBag in 'mean' mode: each bag (delimited by offsets) returns the mean of its embedding rows."""

    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="mean")

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.bag(indices, offsets)


num_embeddings = 64
num_bags = 12
max_bag_len = 6
embedding_dim = 40


def get_inputs():
    lengths = torch.randint(1, max_bag_len + 1, (num_bags,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    indices = torch.randint(0, num_embeddings, (int(lengths.sum()),))
    return [indices, offsets]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
