import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_fold_kernel(
    w_ptr, b_ptr, rm_ptr, rv_ptr,
    scale_ptr, shift_ptr,
    C, eps,
    BLOCK_C: tl.constexpr,
):
    # fold running stats + affine into y = x * scale + shift (one pass over channels)
    cs = tl.arange(0, BLOCK_C)
    cm = cs < C
    w = tl.load(w_ptr + cs, mask=cm, other=1.0).to(tl.float32)
    b = tl.load(b_ptr + cs, mask=cm, other=0.0).to(tl.float32)
    mean = tl.load(rm_ptr + cs, mask=cm, other=0.0).to(tl.float32)
    var = tl.load(rv_ptr + cs, mask=cm, other=1.0).to(tl.float32)
    inv_std = 1.0 / tl.sqrt(var + eps)
    scale = w * inv_std
    tl.store(scale_ptr + cs, scale, mask=cm)
    tl.store(shift_ptr + cs, b - mean * scale, mask=cm)


@triton.jit
def bn_apply_kernel(
    x_ptr, y_ptr, scale_ptr, shift_ptr,
    total, C, H, W,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    # NCHW, contiguous: recover the channel of every element
    ch = (offs // (H * W)) % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    sc = tl.load(scale_ptr + ch, mask=mask, other=0.0)
    sh = tl.load(shift_ptr + ch, mask=mask, other=0.0)
    y = x.to(tl.float32) * sc + sh
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def batchnorm_eval_triton(x, running_mean, running_var, weight, bias, eps):
    if x.dim() not in (2, 3, 4):
        raise ValueError(f"expected 2-D, 3-D or 4-D input, got {x.dim()}-D")
    x = x.contiguous()
    N, C = x.shape[0], x.shape[1]
    H = x.shape[2] if x.dim() >= 3 else 1
    W = x.shape[3] if x.dim() == 4 else 1
    if weight is None:
        weight = torch.ones(C, device=x.device, dtype=torch.float32)
    if bias is None:
        bias = torch.zeros(C, device=x.device, dtype=torch.float32)

    scale = torch.empty(C, device=x.device, dtype=torch.float32)
    shift = torch.empty(C, device=x.device, dtype=torch.float32)
    BLOCK_C = triton.next_power_of_2(C)
    bn_fold_kernel[(1,)](weight, bias, running_mean, running_var, scale, shift, C, eps, BLOCK_C=BLOCK_C)

    y = torch.empty_like(x)
    total = x.numel()
    BLOCK = 1024
    bn_apply_kernel[(triton.cdiv(total, BLOCK),)](x, y, scale, shift, total, C, H, W, BLOCK=BLOCK)
    return y


class ModelNew(nn.Module):
    def __init__(self, num_features: int = 80, eps: float = 1e-3, momentum: float = 0.1) -> None:
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.weight = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))
        self.register_buffer("running_mean", torch.randn(num_features))
        self.register_buffer("running_var", torch.rand(num_features) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # inference path: running statistics only, momentum plays no role here
        return batchnorm_eval_triton(
            x, self.running_mean, self.running_var, self.weight, self.bias, self.eps
        )
