import torch
import torch.nn as nn
import triton
import triton.language as tl


def _pooled_size(size: int, k: int, s: int, p: int, ceil_mode: bool) -> int:
    if ceil_mode:
        out = -(-(size + 2 * p - k) // s) + 1
        # PyTorch drops a last window that would start in the right padding
        if (out - 1) * s >= size + p:
            out -= 1
        return out
    return (size + 2 * p - k) // s + 1


@triton.jit
def avg_pool2d_fwd(
    x_ptr, y_ptr,
    C, H, W, OH, OW,
    stride_xn, stride_xc, stride_xh, stride_xw,
    stride_yn, stride_yc, stride_yh, stride_yw,
    KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
    BLOCK_OH: tl.constexpr, BLOCK_OW: tl.constexpr,
):
    plane = tl.program_id(0)          # n * C + c
    pid_oh = tl.program_id(1)
    n = plane // C
    c = plane % C

    oh = pid_oh * BLOCK_OH + tl.arange(0, BLOCK_OH)
    ow = tl.arange(0, BLOCK_OW)
    h_start = oh * STRIDE - PAD
    w_start = ow * STRIDE - PAD

    x_plane = x_ptr + n * stride_xn + c * stride_xc
    acc = tl.zeros((BLOCK_OH, BLOCK_OW), dtype=tl.float32)
    for kh in tl.static_range(KS):
        ih = h_start + kh
        h_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KS):
            iw = w_start + kw
            w_ok = (iw >= 0) & (iw < W)
            vals = tl.load(x_plane + ih[:, None] * stride_xh + iw[None, :] * stride_xw,
                           mask=h_ok[:, None] & w_ok[None, :], other=0.0)
            acc += vals.to(tl.float32)

    # count_include_pad=True (default): padded zeros are part of the window,
    # so every window is averaged over the full KS * KS elements
    h_end = tl.minimum(h_start + KS, H + PAD)
    w_end = tl.minimum(w_start + KS, W + PAD)
    acc = acc / ((h_end - h_start)[:, None] * (w_end - w_start)[None, :]).to(tl.float32)

    out_mask = (oh[:, None] < OH) & (ow[None, :] < OW)
    y_ptrs = y_ptr + n * stride_yn + c * stride_yc + oh[:, None] * stride_yh + ow[None, :] * stride_yw
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


def triton_avg_pool2d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    assert x.dim() == 4, "expected an NCHW tensor"
    assert padding <= kernel_size // 2, "pad should be at most half of the kernel size"
    N, C, H, W = x.shape
    OH = _pooled_size(H, kernel_size, stride, padding, ceil_mode=True)
    OW = _pooled_size(W, kernel_size, stride, padding, ceil_mode=True)
    y = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype)

    BLOCK_OW = triton.next_power_of_2(OW)
    BLOCK_OH = min(triton.next_power_of_2(OH), max(1, 1024 // BLOCK_OW))
    grid = (N * C, triton.cdiv(OH, BLOCK_OH))
    avg_pool2d_fwd[grid](
        x, y,
        C, H, W, OH, OW,
        x.stride(0), x.stride(1), x.stride(2), x.stride(3),
        y.stride(0), y.stride(1), y.stride(2), y.stride(3),
        KS=kernel_size, STRIDE=stride, PAD=padding,
        BLOCK_OH=BLOCK_OH, BLOCK_OW=BLOCK_OW,
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_avg_pool2d(x, self.kernel_size, self.stride, self.padding)
