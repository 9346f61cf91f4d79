import torch
import torch.nn as nn
import triton
import triton.language as tl


def _pooled_len(L, k, s, p, ceil_mode=False):
    """Output length of a 1-D pooling window sweep (PyTorch rules)."""
    span = L + 2 * p - k
    if ceil_mode:
        out = -(-span // s) + 1
        # the last window has to start inside the input or the left padding
        if (out - 1) * s >= L + p:
            out -= 1
    else:
        out = span // s + 1
    return out


@triton.jit
def maxpool_unpool_kernel(
    x_ptr, out_ptr,
    C, H, W, OH, OW,
    sx_n, sx_c, sx_h, sx_w,
    K: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    plane = tl.program_id(0)
    blk = tl.program_id(1)
    n = plane // C
    c = plane % C

    offs = blk * BLOCK + tl.arange(0, BLOCK)
    live = offs < OH * OW
    ph = offs // OW
    pw = offs % OW
    h0 = ph * STRIDE - PAD
    w0 = pw * STRIDE - PAD

    src = x_ptr + n * sx_n + c * sx_c
    best = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    best_idx = tl.zeros([BLOCK], dtype=tl.int32)
    # scan the window row-major so that ties keep the first index like ATen
    for kh in tl.static_range(K):
        for kw in tl.static_range(K):
            ih = h0 + kh
            iw = w0 + kw
            ok = live & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            v = tl.load(src + ih * sx_h + iw * sx_w, mask=ok, other=float("-inf")).to(tl.float32)
            upd = (v > best) | (v != v)
            best = tl.where(upd, v, best)
            best_idx = tl.where(upd, ih * W + iw, best_idx)

    # scatter the window max back to where it came from (output is contiguous, pre-zeroed)
    dst = out_ptr + plane * H * W + best_idx
    tl.store(dst, best.to(out_ptr.dtype.element_ty), mask=live)


def maxpool_unpool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    if stride is None:
        stride = kernel_size
    N, C, H, W = x.shape
    OH = _pooled_len(H, kernel_size, stride, padding, ceil_mode)
    OW = _pooled_len(W, kernel_size, stride, padding, ceil_mode)
    out = torch.zeros((N, C, H, W), device=x.device, dtype=x.dtype)
    n_pooled = OH * OW
    BLOCK = min(triton.next_power_of_2(n_pooled), 512)
    grid = (N * C, triton.cdiv(n_pooled, BLOCK))
    maxpool_unpool_kernel[grid](
        x, out,
        C, H, W, OH, OW,
        x.stride(0), x.stride(1), x.stride(2), x.stride(3),
        K=kernel_size, STRIDE=stride, PAD=padding,
        BLOCK=BLOCK,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return maxpool_unpool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode)
