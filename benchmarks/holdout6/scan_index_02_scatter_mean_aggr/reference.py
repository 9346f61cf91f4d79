import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean aggregation of edge messages at their destination nodes (message passing, PyG aggr="mean").

    messages: (num_edges, feat_dim) one message per edge; dst: (num_edges,) destination node of each edge.
    Nodes that receive no message get a zero vector.
    """

    def __init__(self, num_nodes):
        super().__init__()
        self.num_nodes = num_nodes

    def forward(self, messages, dst):
        out = messages.new_zeros(self.num_nodes, messages.size(1))
        out.index_add_(0, dst, messages)
        deg = messages.new_zeros(self.num_nodes)
        deg.index_add_(0, dst, messages.new_ones(dst.numel()))
        return out / deg.clamp(min=1).unsqueeze(-1)


num_nodes = 48
num_edges = 64
feat_dim = 24


def get_inputs():
    messages = torch.randn(num_edges, feat_dim)
    dst = torch.randint(0, num_nodes, (num_edges,))
    return [messages, dst]


def get_init_inputs():
    return [num_nodes]
