import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr,
    C, HW, G, CPG, eps,
    BLOCK_SIZE: tl.constexpr,
):
    # one program per (sample, group); a group is CPG contiguous channel planes
    pid = tl.program_id(0)
    n = pid // G
    g = pid % G
    group_size = CPG * HW
    base = n * C * HW + g * CPG * HW

    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < group_size
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)

    mean = tl.sum(x, axis=0) / group_size
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / group_size
    rstd = 1.0 / tl.sqrt(var + eps)

    ch = g * CPG + offs // HW
    w = tl.load(w_ptr + ch, mask=mask, other=1.0)
    b = tl.load(b_ptr + ch, mask=mask, other=0.0)
    y = diff * rstd * w + b
    tl.store(y_ptr + base + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, num_channels: int) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        G = self.gn.num_groups
        CPG = C // G
        y = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(CPG * H * W)
        group_norm_kernel[(N * G,)](
            x, y, self.gn.weight, self.gn.bias,
            C, H * W, G, CPG, self.gn.eps,
            BLOCK_SIZE=BLOCK_SIZE,
        )
        return y
