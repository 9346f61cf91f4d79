import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, y_ptr, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    num_blocks = n_cols // BLOCK_SIZE

    # pass 1: mean
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for b in range(num_blocks):
        cols = b * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(acc, axis=0) / n_cols

    # pass 2: variance
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for b in range(num_blocks):
        cols = b * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / n_cols
    rstd = 1.0 / (tl.sqrt(var) + eps)

    # pass 3: normalise
    for b in range(num_blocks):
        cols = b * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        tl.store(y_row + cols, (x - mean) * rstd, mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int) -> None:
        super().__init__()
        self.normalized_shape = normalized_shape
        self.eps = 1e-5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        layernorm_kernel[(n_rows,)](x, y, x.stride(0), n_cols, self.eps, BLOCK_SIZE=256)
        return y
