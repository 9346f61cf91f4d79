import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_rows_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * w + eps, mask=mask)


# The generation wrote a module where the reference has a function.
class TritonScaleRows(nn.Module):
    def __init__(self, weight, eps=1e-6):
        super().__init__()
        self.weight = weight
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = x.shape[-1]
        scale_rows_kernel[(x.numel() // n_cols,)](x, self.weight, out, n_cols, self.eps, BLOCK=512)
        return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, weight):
        return scale_rows(x, weight, 1e-05)
