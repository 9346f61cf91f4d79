import torch
import torch.nn as nn
import triton
import triton.language as tl

SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.0


@triton.jit
def _elu(x, alpha):
    return tl.where(x > 0, x, alpha * (tl.exp(x) - 1.0))


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)], key=["n_elements"])
@triton.jit
def selu_kernel(x_ptr, out_ptr, n_elements, scale, alpha, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = scale * _elu(x, alpha)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
        selu_kernel[grid](x, out, n_elements, SELU_SCALE, SELU_ALPHA)
        return out
