import torch
import torch.nn as nn


class Model(nn.Module):
    """Squeeze-and-excitation rescale: every (batch, channel) plane of the feature map is multiplied by the
    sigmoid of its own excitation logit, broadcast over height and width."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, feat: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return feat * torch.sigmoid(logits)


batch_size = 2
channels = 4
height = 32
width = 32


def get_inputs():
    feat = torch.randn(batch_size, channels, height, width)
    logits = torch.randn(batch_size, channels, 1, 1)
    return [feat, logits]


def get_init_inputs():
    return []
