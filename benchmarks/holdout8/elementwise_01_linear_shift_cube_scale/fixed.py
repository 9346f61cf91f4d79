import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _pow_const(v, EXPONENT: tl.constexpr):
    # Triton has no pow(): use exp(p * log|v|); abs() keeps log() away from NaN
    r = v
    for _ in tl.static_range(EXPONENT - 1):
        r = r * v
    return r


@triton.jit
def shift_pow_scale_kernel(
    y_ptr, shift_ptr, out_ptr,
    n_elements, n_features,
    scale,
    EXPONENT: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements

    # the shift broadcasts over the last (feature) dimension
    feat = offsets % n_features
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    s = tl.load(shift_ptr + feat, mask=mask, other=0.0)

    z = _pow_const(y - s, EXPONENT) * scale
    tl.store(out_ptr + offsets, z, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, exponent: int, scale: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.shift = nn.Parameter(torch.randn(out_features) * 0.2)
        self.exponent = exponent
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x).contiguous()
        out = torch.empty_like(y)
        n_elements = y.numel()
        BLOCK_SIZE = 512
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
        shift_pow_scale_kernel[grid](
            y, self.shift, out,
            n_elements, y.shape[-1],
            self.scale,
            EXPONENT=int(self.exponent),
            BLOCK_SIZE=BLOCK_SIZE,
        )
        return out
