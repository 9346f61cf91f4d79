import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sqnorm_rows(X, Y, R, C, BR: tl.constexpr, BC: tl.constexpr):
    # one program -> BR rows of X (R x C, row-major), reduced along C
    pid = tl.program_id(0)
    r = pid * BR + tl.arange(0, BR)
    rm = r < R
    acc = tl.zeros([BR], dtype=tl.float32)
    for c0 in range(0, C, BC):
        c = c0 + tl.arange(0, BC)
        v = tl.load(X + r[:, None] * C + c[None, :], mask=rm[:, None] & (c[None, :] < C), other=0.0).to(tl.float32)
        acc += tl.sum(v * v, axis=1)
    tl.store(Y + r, tl.sqrt(acc), mask=rm)


def vector_norm_dim0(x: torch.Tensor, keepdim: bool = True) -> torch.Tensor:
    assert x.ndim == 2, "expects a 2-D input"
    # reduce over dim 0 -> make the columns rows so the kernel walks contiguous memory
    xt = x.t().contiguous()
    R, C = xt.shape
    y = torch.empty(R, device=x.device, dtype=torch.float32)
    BR = 16
    BC = min(64, triton.next_power_of_2(C))
    grid = (triton.cdiv(R, BR),)
    _sqnorm_rows[grid](xt, y, R, C, BR=BR, BC=BC)
    y = y.to(x.dtype)
    return y.unsqueeze(0) if keepdim else y


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return vector_norm_dim0(x, keepdim=True)
