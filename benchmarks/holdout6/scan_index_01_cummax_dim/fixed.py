import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def _cummax_strided_kernel(
    src_ptr,
    dst_ptr,
    scan_len,
    inner,
    outer,
    BLOCK_OUTER: tl.constexpr,
    BLOCK_INNER: tl.constexpr,
):
    # View the input as (outer, scan_len, inner). Each program owns a BLOCK_OUTER x BLOCK_INNER tile of
    # independent lanes and walks down the scanned axis, keeping the running max in registers.
    pid_o = tl.program_id(0)
    pid_i = tl.program_id(1)
    slabs = pid_o * BLOCK_OUTER + tl.arange(0, BLOCK_OUTER)
    cols = pid_i * BLOCK_INNER + tl.arange(0, BLOCK_INNER)
    lane_mask = (slabs[:, None] < outer) & (cols[None, :] < inner)
    base = slabs[:, None] * scan_len * inner + cols[None, :]

    running = tl.full([BLOCK_OUTER, BLOCK_INNER], float("-inf"), dtype=tl.float32)
    for step in range(0, scan_len):
        offs = base + step * inner
        vals = tl.load(src_ptr + offs, mask=lane_mask, other=float("-inf")).to(tl.float32)
        running = _max_combine(running, vals)
        tl.store(dst_ptr + offs, running.to(dst_ptr.dtype.element_ty), mask=lane_mask)


def cummax_values(x: torch.Tensor, dim: int) -> torch.Tensor:
    dim = dim % x.ndim
    if x.numel() == 0 or not x.is_floating_point():
        # integer / empty inputs are rare here: not worth a kernel
        return torch.cummax(x, dim=dim).values

    x = x.contiguous()
    shape = x.shape
    scan_len = shape[dim]
    outer = 1
    for s in shape[:dim]:
        outer *= s
    inner = x.numel() // (outer * scan_len)
    out = torch.empty_like(x)

    BLOCK_INNER = min(64, triton.next_power_of_2(inner))
    BLOCK_OUTER = min(16, triton.next_power_of_2(outer))
    grid = (triton.cdiv(outer, BLOCK_OUTER), triton.cdiv(inner, BLOCK_INNER))
    _cummax_strided_kernel[grid](
        x, out, scan_len, inner, outer, BLOCK_OUTER=BLOCK_OUTER, BLOCK_INNER=BLOCK_INNER
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cummax_values(x, self.dim)
