import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gather_dim1_kernel(x_ptr, idx_ptr, out_ptr, n_picks,
                       x_stride0, x_stride1, idx_stride0, idx_stride1, out_stride0,
                       BLOCK: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, BLOCK)
    mask = j < n_picks
    cols = tl.load(idx_ptr + row * idx_stride0 + j * idx_stride1, mask=mask, other=0)
    vals = tl.load(x_ptr + row * idx_stride0 + cols * x_stride1, mask=mask, other=0.0)
    tl.store(out_ptr + row * out_stride0 + j, vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        B, K = index.shape
        out = torch.empty((B, K), device=x.device, dtype=x.dtype)
        gather_dim1_kernel[(B,)](
            x, index, out, K,
            x.stride(0), x.stride(1), index.stride(0), index.stride(1), out.stride(0),
            BLOCK=triton.next_power_of_2(K),
        )
        return out
