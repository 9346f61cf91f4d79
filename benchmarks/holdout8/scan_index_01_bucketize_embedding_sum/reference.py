import torch
import torch.nn as nn


class Model(nn.Module):
    """Numeric-feature bucketing (DLRM style): each feature value is mapped to a bin with
    torch.bucketize over fixed, evenly spaced boundaries, the bin embedding is looked up and the
    embeddings of all features of a sample are summed."""

    def __init__(self, num_buckets: int, embed_dim: int, low: float, high: float) -> None:
        super().__init__()
        self.register_buffer("boundaries", torch.linspace(low, high, num_buckets - 1))
        self.embedding = nn.Embedding(num_buckets, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.bucketize(x, self.boundaries)  # right=False: boundaries[i-1] < x <= boundaries[i]
        return self.embedding(idx).sum(dim=1)


batch_size = 16
num_features = 12
num_buckets = 10
embed_dim = 16


def get_inputs():
    return [torch.randn(batch_size, num_features) * 2.0]


def get_init_inputs():
    return [num_buckets, embed_dim, -4.0, 4.0]
