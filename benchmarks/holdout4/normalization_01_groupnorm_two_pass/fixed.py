import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---------------------------------------------------------------------------
# Kernel 1: per-(sample, group) statistics
# ---------------------------------------------------------------------------
@triton.jit
def group_stats_kernel(
    x_ptr,
    mean_ptr,
    rstd_ptr,
    group_numel,  # channels_per_group * H * W
    eps,
    BLOCK: tl.constexpr,
):
    # one program per (n, g); the elements of a group are contiguous in NCHW
    pid = tl.program_id(0)
    base = x_ptr + pid * group_numel
    offs = tl.arange(0, BLOCK)

    # mean
    sum_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        idx = start + offs
        m = idx < group_numel
        v = tl.load(base + idx, mask=m, other=0.0).to(tl.float32)
        sum_acc += v
    mean = tl.sum(sum_acc, axis=0) / group_numel

    # variance (biased, like PyTorch's GroupNorm), second pass for stability
    sq_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, group_numel, BLOCK):
        idx = start + offs
        m = idx < group_numel
        v = tl.load(base + idx, mask=m, other=0.0).to(tl.float32)
        diff = v - mean
        diff = tl.where(m, diff, 0.0)
        sq_acc += diff * diff
    var = tl.sum(sq_acc, axis=0) / group_numel
    rstd = 1.0 / tl.sqrt(var + eps)

    tl.store(mean_ptr + pid, mean)
    tl.store(rstd_ptr + pid, rstd)


# ---------------------------------------------------------------------------
# Kernel 2: normalize + per-channel affine
# ---------------------------------------------------------------------------
@triton.jit
def group_norm_apply_kernel(
    x_ptr,
    y_ptr,
    w_ptr,
    b_ptr,
    mean_ptr,
    rstd_ptr,
    C,
    HW,
    channels_per_group,
    num_groups,
    BLOCK_HW: tl.constexpr,
):
    nc = tl.program_id(0)  # flattened (n, c)
    blk = tl.program_id(1)  # spatial block
    n = nc // C
    c = nc % C
    g = c // channels_per_group

    mean = tl.load(mean_ptr + n * num_groups + g)
    rstd = tl.load(rstd_ptr + n * num_groups + g)
    w = tl.load(w_ptr + c).to(tl.float32)
    b = tl.load(b_ptr + c).to(tl.float32)

    offs = blk * BLOCK_HW + tl.arange(0, BLOCK_HW)
    mask = offs < HW
    x = tl.load(x_ptr + nc * HW + offs, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean) * rstd * w + b
    tl.store(y_ptr + nc * HW + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_group_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, num_groups: int, eps: float):
    assert x.dim() == 4, "expected NCHW input"
    N, C, H, W = x.shape
    assert C % num_groups == 0, "channels must be divisible by num_groups"
    x = x.contiguous()
    cpg = C // num_groups
    HW = H * W
    group_numel = cpg * HW

    mean = torch.empty(N * num_groups, device=x.device, dtype=torch.float32)
    rstd = torch.empty(N * num_groups, device=x.device, dtype=torch.float32)
    y = torch.empty_like(x)

    BLOCK = min(triton.next_power_of_2(group_numel), 256)
    group_stats_kernel[(N * num_groups,)](x, mean, rstd, group_numel, eps, BLOCK=BLOCK)

    BLOCK_HW = min(triton.next_power_of_2(HW), 256)
    grid = (N * C, triton.cdiv(HW, BLOCK_HW))
    group_norm_apply_kernel[grid](x, y, weight, bias, mean, rstd, C, HW, cpg, num_groups, BLOCK_HW=BLOCK_HW)
    return y


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, num_features: int, eps: float) -> None:
        super().__init__()
        # keep the nn.GroupNorm container for its affine parameters; the math runs in Triton
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_group_norm(x, self.gn.weight, self.gn.bias, self.gn.num_groups, self.gn.eps)
