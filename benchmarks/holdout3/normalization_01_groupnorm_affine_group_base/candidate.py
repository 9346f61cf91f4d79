import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _block_offsets(start, limit, BLOCK: tl.constexpr):
    idx = start + tl.arange(0, BLOCK)
    return idx, idx < limit


@triton.jit
def group_norm_fwd_kernel(
    X,
    Y,
    gamma,
    beta,
    HW,
    group_numel,
    channels_per_group,
    num_groups,
    eps,
    BLOCK: tl.constexpr,
):
    # One program normalises one (sample, group) pair. In a contiguous NCHW tensor the
    # channels of a group are adjacent, so the whole group is one contiguous span.
    pid = tl.program_id(0)
    g = pid % num_groups
    base = pid.to(tl.int64) * group_numel
    X += base
    Y += base

    # ---- pass 1: mean ----
    sum_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        idx, mask = _block_offsets(start, group_numel, BLOCK)
        x = tl.load(X + idx, mask=mask, other=0.0).to(tl.float32)
        sum_acc += x
    mean = tl.sum(sum_acc, axis=0) / group_numel

    # ---- pass 2: variance (two-pass for stability) ----
    sq_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        idx, mask = _block_offsets(start, group_numel, BLOCK)
        x = tl.load(X + idx, mask=mask, other=0.0).to(tl.float32)
        diff = x - mean
        sq_acc += diff * diff
    var = tl.sum(sq_acc, axis=0) / group_numel
    rstd = 1.0 / tl.sqrt(var + eps)

    # ---- pass 3: normalise + per-channel affine ----
    for start in range(0, group_numel, BLOCK):
        idx, mask = _block_offsets(start, group_numel, BLOCK)
        x = tl.load(X + idx, mask=mask, other=0.0).to(tl.float32)
        ch = idx // HW
        w = tl.load(gamma + ch, mask=mask, other=1.0).to(tl.float32)
        b = tl.load(beta + ch, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + idx, y.to(Y.dtype.element_ty), mask=mask)


def fused_group_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, num_groups: int, eps: float):
    assert x.dim() >= 3, "expected (N, C, *spatial)"
    N, C = x.shape[0], x.shape[1]
    assert C % num_groups == 0, "channels must divide into groups"
    x = x.contiguous()
    HW = x[0, 0].numel()
    cpg = C // num_groups
    group_numel = cpg * HW
    y = torch.empty_like(x)
    BLOCK = min(triton.next_power_of_2(group_numel), 256)
    grid = (N * num_groups,)
    group_norm_fwd_kernel[grid](
        x, y, weight, bias, HW, group_numel, cpg, num_groups, eps, BLOCK=BLOCK, num_warps=4
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fused_group_norm(x, self.gn.weight, self.gn.bias, self.gn.num_groups, self.gn.eps)
