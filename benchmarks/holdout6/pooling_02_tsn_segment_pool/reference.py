import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Segment consensus for a video head (TSN-style).

    Frame features arrive as (batch, frames, channels). The clip is split into `num_segments` temporal
    segments and the frames of each segment are averaged, exactly as ``nn.AdaptiveAvgPool1d`` does it
    (segments overlap by one frame when the frame count is not a multiple of the segment count).
    """

    def __init__(self, num_segments: int) -> None:
        super().__init__()
        self.num_segments = num_segments
        self.pool = nn.AdaptiveAvgPool1d(num_segments)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        x = frames.transpose(1, 2)  # (B, C, T)
        x = self.pool(x)  # (B, C, S)
        return x.transpose(1, 2)  # (B, S, C)


batch_size = 4
channels = 24
num_frames = 50
num_segments = 7


def get_inputs():
    return [torch.randn(batch_size, num_frames, channels)]


def get_init_inputs():
    return [num_segments]
