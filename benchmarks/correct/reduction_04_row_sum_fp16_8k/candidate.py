import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_fp16_rows_kernel(x_ptr, out_ptr, n_cols, stride_r, stride_c, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)  # fp32 accumulator for fp16 data
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + pid * stride_r + offs * stride_c, mask=offs < n_cols, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + pid, total.to(tl.float16))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=torch.float16)
        sum_fp16_rows_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=1024)
        return out
