"""``F.max_pool2d`` with ``return_indices=True`` in Triton.

One program per (n, c) plane and block of output pixels. The window is scanned in row-major
order with a running (max, argmax) pair; the index is the flat position ``ih * W + iw`` inside
the input plane, which is what ``max_unpool2d`` expects.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def maxpool2d_argmax_kernel(
    x_ptr, y_ptr, idx_ptr,
    C, H, W, H_OUT, W_OUT,
    sxn, sxc, sxh, sxw,
    KSIZE: tl.constexpr,
    STRIDE: tl.constexpr,
    PAD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    plane = tl.program_id(0)
    pid = tl.program_id(1)
    n = plane // C
    c = plane % C

    offs = pid * BLOCK + tl.arange(0, BLOCK)
    omask = offs < H_OUT * W_OUT
    oh = offs // W_OUT
    ow = offs % W_OUT

    x_plane = x_ptr + n * sxn + c * sxc
    best = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    best_idx = tl.zeros([BLOCK], dtype=tl.int32)

    for kh in tl.static_range(KSIZE):
        ih = oh * STRIDE - PAD + kh
        h_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KSIZE):
            iw = ow * STRIDE - PAD + kw
            ok = omask & h_ok & (iw >= 0) & (iw < W)
            v = tl.load(x_plane + ih * sxh + iw * sxw, mask=ok, other=float("-inf")).to(tl.float32)
            take = ok & (v > best)
            best = tl.where(take, v, best)
            best_idx = tl.where(take, ih * W + iw, best_idx)

    # outputs are freshly allocated and contiguous: plane-major, then oh * W_OUT + ow
    out_off = plane * H_OUT * W_OUT + offs
    tl.store(y_ptr + out_off, best.to(y_ptr.dtype.element_ty), mask=omask)
    tl.store(idx_ptr + out_off, best_idx.to(tl.int64), mask=omask)


def max_pool2d_with_indices(x, kernel_size, stride, padding):
    N, C, H, W = x.shape
    H_out = (H + 2 * padding - kernel_size) // stride + 1
    W_out = (W + 2 * padding - kernel_size) // stride + 1
    y = torch.empty((N, C, H_out, W_out), device=x.device, dtype=x.dtype)
    idx = torch.empty((N, C, H_out, W_out), device=x.device, dtype=torch.int64)

    BLOCK = min(256, triton.next_power_of_2(H_out * W_out))
    grid = (N * C, triton.cdiv(H_out * W_out, BLOCK))
    maxpool2d_argmax_kernel[grid](
        x, y, idx,
        C, H, W, H_out, W_out,
        x.stride(0), x.stride(1), x.stride(2), x.stride(3),
        KSIZE=kernel_size, STRIDE=stride, PAD=padding,
        BLOCK=BLOCK,
    )
    return y, idx


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, x: torch.Tensor):
        return max_pool2d_with_indices(x, self.kernel_size, self.stride, self.padding)
