import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_c_w_kernel(
    x_ptr, out_ptr,
    C, H, W,
    stride_b, stride_c, stride_h, stride_w,
    inv_count,
    BLOCK_C: tl.constexpr, BLOCK_W: tl.constexpr,
):
    # one program per (batch, row h): reduce the (C, W) slab x[b, :, h, :]
    pid = tl.program_id(0)
    b = pid // H
    h = pid % W

    c_idx = tl.arange(0, BLOCK_C)
    w_idx = tl.arange(0, BLOCK_W)
    c_mask = c_idx < C
    w_mask = w_idx < W

    slab = x_ptr + b * stride_b + h * stride_h
    ptrs = slab + c_idx[:, None] * stride_c + w_idx[None, :] * stride_w
    tile = tl.load(ptrs, mask=c_mask[:, None] & w_mask[None, :], other=0.0)

    # accumulate in fp32 even for half inputs
    total = tl.sum(tl.sum(tile.to(tl.float32), axis=1), axis=0)
    tl.store(out_ptr + b * H + h, total * inv_count)


def _normalize_dims(dims, ndim):
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(sorted(d % ndim for d in dims))


def mean_over_channels_width(x: torch.Tensor, dims=(1, 3), keepdim: bool = False) -> torch.Tensor:
    assert x.dim() == 4, "expected an NCHW tensor"
    dims = _normalize_dims(dims, x.dim())
    assert dims == (1, 3), f"this kernel only reduces dims (1, 3), got {dims}"

    B, C, H, W = x.shape
    sb, sc, sh, sw = x.stride()

    out = torch.empty((B, H), device=x.device, dtype=x.dtype)

    # whole slab in one tile; keep the channel block modest to limit registers
    BLOCK_C = min(triton.next_power_of_2(C), 16)
    BLOCK_W = triton.next_power_of_2(W)

    grid = lambda meta: (B * H,)
    mean_c_w_kernel[grid](
        x, out,
        C, H, W,
        sb, sc, sh, sw,
        1.0 / (C * W),
        BLOCK_C=BLOCK_C, BLOCK_W=BLOCK_W,
    )

    if keepdim:
        return out.view(B, 1, H, 1)
    return out


class ModelNew(nn.Module):
    def __init__(self, dims=(1, 3), keepdim: bool = False) -> None:
        super().__init__()
        self.dims = tuple(dims)
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return mean_over_channels_width(x, dims=self.dims, keepdim=self.keepdim)
