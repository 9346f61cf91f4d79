import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def film_kernel(x_ptr, gamma_ptr, beta_ptr, out_ptr, n_elements, n_features, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    feat = offsets % n_features
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(gamma_ptr + feat, mask=mask)
    b = tl.load(beta_ptr + feat, mask=mask)
    tl.store(out_ptr + offsets, x * g + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        n_features = x.shape[-1]
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        film_kernel[grid](x, gamma, beta, out, n_elements, n_features, BLOCK_SIZE=BLOCK_SIZE)
        return out
