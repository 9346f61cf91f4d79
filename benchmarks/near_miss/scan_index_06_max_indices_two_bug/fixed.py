import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(X, VALS, IDX, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + row * stride_row + col * stride_col, mask=col < n_cols, other=-float("inf"))
    best, best_idx = tl.max(x, axis=0, return_indices=True)
    tl.store(VALS + row, best)
    tl.store(IDX + row, best_idx.to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor):
        n_rows, n_cols = x.shape
        values = torch.empty(n_rows, dtype=x.dtype, device=x.device)
        indices = torch.empty(n_rows, dtype=torch.int64, device=x.device)
        row_max_kernel[(n_rows,)](x, values, indices, n_cols, x.stride(0), x.stride(1),
                                  BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return values, indices
