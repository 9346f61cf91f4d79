import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def global_avg_pool_kernel(input_ptr, output_ptr, HW, stride_n, stride_c, stride_h, stride_w, W, C,
                           BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    n = pid // C
    c = pid % C
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < HW
    h = offsets // W
    w = offsets % W
    vals = tl.load(input_ptr + n * stride_n + c * stride_c + h * stride_h + w * stride_w, mask=mask, other=0.0)
    mean = tl.sum(vals, axis=0) / HW
    tl.store(output_ptr + pid, mean)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C, H, W = x.shape
        out = torch.empty((N, C, 1, 1), device=x.device, dtype=x.dtype)
        BLOCK_SIZE = triton.next_power_of_2(H * W)
        global_avg_pool_kernel[(N * C,)](
            x, out, H * W, x.stride(0), x.stride(1), x.stride(2), x.stride(3), W, C,
            BLOCK_SIZE=BLOCK_SIZE,
        )
        return out
