import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_softmax_kernel(
    x_ptr, y_ptr, n_cols, stride_x_row, stride_x_col, stride_y_row, scale, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols * stride_x_col, mask=mask, other=float("-inf"))
    logits = x.to(tl.float32) * scale
    logits = logits - tl.max(logits, axis=0)
    num = tl.exp(logits)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_y_row + cols, num / den, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        scale = self.temperature  # logits scaled by the temperature
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        scaled_softmax_kernel[(n_rows,)](
            x, y, n_cols, x.stride(0), x.stride(1), y.stride(0), scale, BLOCK_SIZE=BLOCK_SIZE
        )
        return y
