import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def logaddexp_bcast_kernel(
    a_ptr,        # pointer to the [numel] flattened first operand
    b_ptr,        # pointer to the [n_features] second operand (broadcast over rows)
    out_ptr,      # pointer to the [numel] output
    numel,
    n_features,
    BLOCK_SIZE: tl.constexpr,
):
    # 1-D launch over the flattened output
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < numel

    # column index of every element: b is shared by all rows
    feat_idx = offsets % n_features

    a = tl.load(a_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + feat_idx, mask=mask, other=0.0).to(tl.float32)

    # logaddexp(a, b) = log(exp(a) + exp(b))
    result = tl.log(tl.exp(a) + tl.exp(b))

    tl.store(out_ptr + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)


def fused_logaddexp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """logaddexp for the common case of a last-dim vector `b`; other broadcasts go through PyTorch."""
    if b.dim() != 1 or b.shape[0] != a.shape[-1]:
        # general broadcasting is not handled by the kernel
        return torch.logaddexp(a, b)

    a_flat = a.contiguous().view(-1)
    b_vec = b.contiguous()
    out = torch.empty_like(a_flat)

    numel = a_flat.numel()
    n_features = b_vec.numel()
    BLOCK_SIZE = 512
    grid = (triton.cdiv(numel, BLOCK_SIZE),)
    logaddexp_bcast_kernel[grid](a_flat, b_vec, out, numel, n_features, BLOCK_SIZE=BLOCK_SIZE)
    return out.view(a.shape)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return fused_logaddexp(a, b)
