import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr,
    group_size, L, CPG, G, eps,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)  # batch * G + group
    g = pid % G
    offs = tl.arange(0, BLOCK)
    mask = offs < group_size
    base = pid * group_size
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / group_size
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / group_size
    y = xc / tl.sqrt(var + eps)
    tl.store(y_ptr + base + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, num_channels: int) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, C, L = x.shape
        G = self.gn.num_groups
        cpg = C // G
        group_size = cpg * L
        y = torch.empty_like(x)
        BLOCK = triton.next_power_of_2(group_size)
        group_norm_kernel[(B * G,)](
            x, y, self.gn.weight, self.gn.bias, group_size, L, cpg, G, self.gn.eps, BLOCK=BLOCK
        )
        return y
