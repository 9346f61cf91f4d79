import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def concat_pool_kernel(
    feat_ptr,          # [n_rows, HW] contiguous view of the (B, C, H, W) feature map
    pooled_ptr,        # [B, 2*C] output: max-pooled channels first, then avg-pooled
    n_rows, C, HW,
    inv_hw,
    BLOCK_R: tl.constexpr,
    BLOCK_HW: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    cols = tl.arange(0, BLOCK_HW)

    run_max = tl.full((BLOCK_R,), float("-inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK_R,), dtype=tl.float32)

    # sweep the spatial positions in chunks; a single load feeds both reductions
    for start in range(0, HW, BLOCK_HW):
        hw_idx = start + cols
        mask = row_mask[:, None] & (hw_idx[None, :] < HW)
        vals = tl.load(feat_ptr + rows[:, None] * HW + hw_idx[None, :], mask=mask, other=0.0).to(tl.float32)
        run_max = tl.maximum(run_max, tl.max(vals, axis=1))
        run_sum += tl.sum(vals, axis=1)

    # row r = b * C + c  ->  out[b, c] (max) and out[b, C + c] (mean)
    b = rows // C
    c = rows % C
    out_off = b * (2 * C) + c
    tl.store(pooled_ptr + out_off, run_max.to(pooled_ptr.dtype.element_ty), mask=row_mask)
    tl.store(pooled_ptr + out_off + C, (run_sum * inv_hw).to(pooled_ptr.dtype.element_ty), mask=row_mask)


def adaptive_concat_pool2d(x: torch.Tensor) -> torch.Tensor:
    """torch.cat([adaptive_max_pool2d(x, 1), adaptive_avg_pool2d(x, 1)], dim=1) in one Triton pass."""
    B, C, H, W = x.shape
    HW = H * W
    feats = x.reshape(B * C, HW).contiguous()
    n_rows = B * C
    pooled = torch.empty((B, 2 * C), device=x.device, dtype=x.dtype)

    BLOCK_R = 16
    BLOCK_HW = min(triton.next_power_of_2(HW), 128)
    grid = (triton.cdiv(n_rows, BLOCK_R),)
    concat_pool_kernel[grid](feats, pooled, n_rows, C, HW, 1.0 / HW, BLOCK_R=BLOCK_R, BLOCK_HW=BLOCK_HW)
    return pooled.view(B, 2 * C, 1, 1)


class ModelNew(nn.Module):
    def __init__(self, size=None) -> None:
        super().__init__()
        self.size = size or 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.size != 1 or x.dim() != 4:
            # general adaptive output sizes: not needed for the classification head, keep PyTorch's path
            return torch.cat([F.adaptive_max_pool2d(x, self.size), F.adaptive_avg_pool2d(x, self.size)], 1)
        return adaptive_concat_pool2d(x)
