import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Excitation half of a MobileNetV3 squeeze-and-excitation block.

    The squeeze path (pool + two 1x1 convs) has already produced one logit per channel, ``s`` of shape
    (B, C, 1, 1); this module rescales the feature map channel by channel with a hard sigmoid
    (relu6(s + 3) / 6) or, for the MobileNetV2-style variant, the logistic sigmoid.
    """

    def __init__(self, channels: int, hard_gate: bool = True) -> None:
        super().__init__()
        self.channels = channels
        self.hard_gate = hard_gate

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        assert x.shape[1] == self.channels
        if self.hard_gate:
            gate = F.relu6(s + 3.0) / 6.0
        else:
            gate = torch.sigmoid(s)
        return x * gate


batch_size = 4
channels = 24
height = 8
width = 8


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    s = torch.randn(batch_size, channels, 1, 1) * 3.0
    return [x, s]


def get_init_inputs():
    return [channels, True]
