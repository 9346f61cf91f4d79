import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lsm_t(X, Y, sx, sy, N, inv_t, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < N
    z = tl.load(X + r * sx + c, mask=m, other=-float("inf")).to(tl.float32) * inv_t
    mx = tl.max(z, 0)
    s = tl.sum(tl.where(m, tl.exp(z - mx), 0.0), 0)
    y = z - mx - tl.log(s)
    tl.store(Y + r * sy + c, y, mask=m)


def log_softmax_t(x, t):
    sh = x.shape
    N = sh[-1]
    x2 = x.reshape(-1, N)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    M = x2.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=torch.float32)
    BLOCK = triton.next_power_of_2(N)
    _lsm_t[(M,)](x2, y, x2.stride(0), y.stride(0), N, 1.0 / t, BLOCK=BLOCK, num_warps=4)
    return y.to(x.dtype).view(sh)


class ModelNew(nn.Module):
    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, logits):
        if logits.dtype == torch.float64:  # no fp64 path in the kernel
            return torch.log_softmax(logits / self.temperature, dim=-1)
        return log_softmax_t(logits, self.temperature)
