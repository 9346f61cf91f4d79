import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def batchnorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, N, C, HW, eps, BLOCK: tl.constexpr):
    # one program per channel; statistics over (N, H, W)
    c = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    count = N * HW

    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for n in range(0, N):
        base = x_ptr + n * C * HW + c * HW
        for start in range(0, HW, BLOCK):
            idx = start + offs
            x = tl.load(base + idx, mask=idx < HW, other=0.0).to(tl.float32)
            acc += x
    mean = tl.sum(acc, axis=0) / count

    acc_var = tl.zeros([BLOCK], dtype=tl.float32)
    for n in range(0, N):
        base = x_ptr + n * C * HW + c * HW
        for start in range(0, HW, BLOCK):
            idx = start + offs
            mask = idx < HW
            x = tl.load(base + idx, mask=mask, other=0.0).to(tl.float32)
            d = tl.where(mask, x - mean, 0.0)
            acc_var += d * d
    var = tl.sum(acc_var, axis=0) / count
    rstd = 1.0 / tl.sqrt(var + eps)

    w = tl.load(w_ptr + c)
    b = tl.load(b_ptr + c)
    for n in range(0, N):
        base = n * C * HW + c * HW
        for start in range(0, HW, BLOCK):
            idx = start + offs
            mask = idx < HW
            x = tl.load(x_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(y_ptr + base + idx, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        y = torch.empty_like(x)
        BLOCK = 64
        batchnorm_kernel[(C,)](x, y, self.bn.weight, self.bn.bias, N, C, H * W, self.bn.eps, BLOCK=BLOCK)
        return y
