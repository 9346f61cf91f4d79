import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def addcmul_gate_kernel(
    x_ptr, t_ptr, g_ptr, o_ptr,
    n_rows, n_cols, n_channels,
    value,
    BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr,
):
    """Each program owns BLOCK_R rows of the (batch*channels, length) view and walks the length axis."""
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    # the gate has one row per batch element: row r of x belongs to batch r // channels
    g_rows = rows // n_channels

    for c0 in range(0, n_cols, BLOCK_L):
        cols = c0 + tl.arange(0, BLOCK_L)
        cmask = cols < n_cols
        mask = rmask[:, None] & cmask[None, :]

        offs = rows[:, None] * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        t = tl.load(t_ptr + offs, mask=mask, other=0.0)
        g = tl.load(g_ptr + g_rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)

        out = x + value * (t * g)
        tl.store(o_ptr + offs, out, mask=mask)


def addcmul_gate(x: torch.Tensor, t1: torch.Tensor, gate: torch.Tensor, value: float) -> torch.Tensor:
    if x.dtype not in (torch.float16, torch.float32) or x.dim() != 3:
        # not a layout the kernel handles
        return torch.addcmul(x, t1, gate, value=value)
    B, C, L = x.shape
    assert t1.shape == x.shape, "t1 must match x"
    assert gate.shape == (B, 1, L), "gate must be (batch, 1, length)"

    x2 = x.reshape(B * C, L).contiguous()
    t2 = t1.reshape(B * C, L).contiguous()
    g2 = gate.reshape(B, L).contiguous()
    out = torch.empty_like(x2)

    BLOCK_R = 8
    BLOCK_L = 128
    grid = (triton.cdiv(B * C, BLOCK_R),)
    addcmul_gate_kernel[grid](
        x2, t2, g2, out,
        B * C, L, C,
        float(value),
        BLOCK_R=BLOCK_R, BLOCK_L=BLOCK_L,
    )
    return out.view(B, C, L)


class ModelNew(nn.Module):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor, t1: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        return addcmul_gate(x, t1, gate, self.value)
