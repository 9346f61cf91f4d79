import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _window_bounds(o, STRIDE: tl.constexpr, PAD: tl.constexpr, KS: tl.constexpr, extent):
    """First input index of the window and its (padded) end, as in PyTorch's avg_pool3d."""
    start = o * STRIDE - PAD
    end = tl.minimum(start + KS, extent + PAD)
    return start, end


@triton.jit
def avg_pool3d_fwd_kernel(
    inp,
    outp,
    D, H, W,
    OD, OH, OW,
    n_out,
    KS: tl.constexpr,
    STRIDE: tl.constexpr,
    PAD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """One program per (batch*channel plane, block of output voxels).

    The output voxels of a plane are flattened to a 1-D index and decomposed back into
    (od, oh, ow); every program walks the KS x KS x KS window with compile-time loops.
    """
    plane = tl.program_id(0)
    blk = tl.program_id(1)

    idx = blk * BLOCK + tl.arange(0, BLOCK)
    live = idx < n_out
    ow = idx % OW
    oh = (idx // OW) % OH
    od = idx // (OW * OH)

    d_start, d_end = _window_bounds(od, STRIDE, PAD, KS, D)
    h_start, h_end = _window_bounds(oh, STRIDE, PAD, KS, H)
    w_start, w_end = _window_bounds(ow, STRIDE, PAD, KS, W)
    # number of elements the average is taken over
    pool_size = (d_end - d_start) * (h_end - h_start) * (w_end - w_start)

    plane_ptr = inp + plane.to(tl.int64) * D * H * W
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for kd in tl.static_range(KS):
        id_ = d_start + kd
        ok_d = (id_ >= 0) & (id_ < D)
        for kh in tl.static_range(KS):
            ih = h_start + kh
            ok_h = ok_d & (ih >= 0) & (ih < H)
            for kw in tl.static_range(KS):
                iw = w_start + kw
                ok = live & ok_h & (iw >= 0) & (iw < W)
                v = tl.load(plane_ptr + (id_ * H + ih) * W + iw, mask=ok, other=0.0)
                acc += v.to(tl.float32)

    res = acc / pool_size.to(tl.float32)
    tl.store(outp + plane.to(tl.int64) * n_out + idx, res.to(outp.dtype.element_ty), mask=live)


def avg_pool3d_triton(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    """AvgPool3d(kernel_size, stride, padding, count_include_pad=False) on an (N, C, D, H, W) tensor."""
    assert x.dim() == 5, "expected an (N, C, D, H, W) input"
    assert padding <= kernel_size // 2, "pad should be at most half of the kernel size"
    x = x.contiguous()
    N, C, D, H, W = x.shape
    OD = (D + 2 * padding - kernel_size) // stride + 1
    OH = (H + 2 * padding - kernel_size) // stride + 1
    OW = (W + 2 * padding - kernel_size) // stride + 1
    y = torch.empty((N, C, OD, OH, OW), device=x.device, dtype=x.dtype)

    n_out = OD * OH * OW
    BLOCK = min(triton.next_power_of_2(n_out), 1024)
    grid = (N * C, triton.cdiv(n_out, BLOCK))
    avg_pool3d_fwd_kernel[grid](
        x, y,
        D, H, W,
        OD, OH, OW,
        n_out,
        KS=kernel_size,
        STRIDE=stride,
        PAD=padding,
        BLOCK=BLOCK,
        num_warps=4,
    )
    return y


class ModelNew(nn.Module):
    """Triton replacement for nn.AvgPool3d(..., count_include_pad=False)."""

    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return avg_pool3d_triton(x, self.kernel_size, self.stride, self.padding)
