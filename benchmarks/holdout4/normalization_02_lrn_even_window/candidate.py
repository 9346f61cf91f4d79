"""Triton implementation of torch.nn.LocalResponseNorm for NCHW tensors.

For every position the squared activations of neighbouring channels are averaged over a window of
``size`` channels and the input is divided by ``(k + alpha * avg) ** beta``.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _pow_neg(base, beta):
    """base ** (-beta) for strictly positive base."""
    return tl.exp(-beta * tl.log(base))


@triton.autotune(
    configs=[triton.Config({"BLOCK_HW": 64}, num_warps=4)],
    key=["C", "HW"],
)
@triton.jit
def lrn_fwd_kernel(
    inp_ptr,
    out_ptr,
    C,
    HW,
    alpha_over_size,
    beta,
    k,
    PAD_LO: tl.constexpr,
    PAD_HI: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BLOCK_HW: tl.constexpr,
):
    """One program handles every channel of one sample for BLOCK_HW spatial positions.

    The tile is [BLOCK_C, BLOCK_HW]; for each shift d in the channel window we load the shifted tile
    (zero outside [0, C), like the zero padding used by PyTorch) and accumulate its squares.
    """
    n = tl.program_id(0)
    pid_hw = tl.program_id(1)

    c_offs = tl.arange(0, BLOCK_C)
    hw_offs = pid_hw * BLOCK_HW + tl.arange(0, BLOCK_HW)
    hw_mask = hw_offs < HW

    sample_base = inp_ptr + n * C * HW

    sq_sum = tl.zeros([BLOCK_C, BLOCK_HW], dtype=tl.float32)
    for d in tl.static_range(0, PAD_LO + PAD_HI + 1):
        cc = c_offs + d - PAD_LO
        m = ((cc >= 0) & (cc < C))[:, None] & hw_mask[None, :]
        v = tl.load(sample_base + cc[:, None] * HW + hw_offs[None, :], mask=m, other=0.0).to(tl.float32)
        sq_sum += v * v

    centre_mask = (c_offs < C)[:, None] & hw_mask[None, :]
    x = tl.load(sample_base + c_offs[:, None] * HW + hw_offs[None, :], mask=centre_mask, other=0.0)
    x = x.to(tl.float32)

    denom_base = k + alpha_over_size * sq_sum
    y = x * _pow_neg(denom_base, beta)
    tl.store(out_ptr + n * C * HW + c_offs[:, None] * HW + hw_offs[None, :], y, mask=centre_mask)


def local_response_norm(x: torch.Tensor, size: int, alpha: float, beta: float, k: float) -> torch.Tensor:
    """Host wrapper: validates the input, picks the tile sizes and launches ``lrn_fwd_kernel``.

    Args:
        x: (N, C, H, W) float tensor.
        size: number of neighbouring channels in the window.
        alpha, beta, k: LRN hyper-parameters (PyTorch semantics: alpha is divided by ``size``).
    """
    assert x.dim() == 4, "LRN kernel expects an NCHW tensor"
    assert x.is_floating_point()
    x = x.contiguous()
    N, C, H, W = x.shape
    HW = H * W
    out = torch.empty_like(x)

    # window of `size` channels around c: `size // 2` channels before and after
    pad_lo = size // 2
    pad_hi = size // 2

    BLOCK_C = triton.next_power_of_2(C)
    assert BLOCK_C <= 1024, "too many channels for a single tile"

    grid = lambda meta: (N, triton.cdiv(HW, meta["BLOCK_HW"]))  # noqa: E731
    lrn_fwd_kernel[grid](
        x,
        out,
        C,
        HW,
        alpha / size,
        beta,
        k,
        PAD_LO=pad_lo,
        PAD_HI=pad_hi,
        BLOCK_C=BLOCK_C,
    )
    return out


class ModelNew(nn.Module):
    """Drop-in replacement for ``nn.LocalResponseNorm`` backed by a Triton kernel."""

    def __init__(self, size: int, alpha: float, beta: float, k: float) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return local_response_norm(x, self.size, self.alpha, self.beta, self.k)
