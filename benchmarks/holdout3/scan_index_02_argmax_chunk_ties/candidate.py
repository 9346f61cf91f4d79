import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _chunk_argmax(vals, cols):
    # per-row max of the chunk, and the first column that reaches it
    cmax = tl.max(vals, axis=1)
    is_max = vals == cmax[:, None]
    cidx = tl.min(tl.where(is_max, cols[None, :], 2147483647), axis=1)
    return cmax, cidx


@triton.autotune(configs=[triton.Config({"BLOCK_M": 8, "BLOCK_N": 128}, num_warps=4)], key=["n_cols"])
@triton.jit
def row_argmax_kernel(
    src_ptr,
    index_ptr,
    n_rows,
    n_cols,
    stride_row,
    stride_col,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows

    best_val = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    best_idx = tl.zeros((BLOCK_M,), dtype=tl.int32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        tile_mask = row_ok[:, None] & (cols[None, :] < n_cols)
        vals = tl.load(
            src_ptr + rows[:, None] * stride_row + cols[None, :] * stride_col,
            mask=tile_mask,
            other=0.0,
        ).to(tl.float32)
        cmax, cidx = _chunk_argmax(vals, cols)
        # merge with the running best of the previous chunks
        take = cmax >= best_val
        best_idx = tl.where(take, cidx, best_idx)
        best_val = tl.where(take, cmax, best_val)

    tl.store(index_ptr + rows, best_idx.to(tl.int64), mask=row_ok)


def argmax_lastdim(x: torch.Tensor) -> torch.Tensor:
    assert x.dim() == 2, "expects a 2-D input"
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, device=x.device, dtype=torch.int64)
    grid = lambda meta: (triton.cdiv(n_rows, meta["BLOCK_M"]),)  # noqa: E731
    row_argmax_kernel[grid](x, out, n_rows, n_cols, x.stride(0), x.stride(1))
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.dim in (1, -1), "only the last dimension is supported"
        return argmax_lastdim(x)
