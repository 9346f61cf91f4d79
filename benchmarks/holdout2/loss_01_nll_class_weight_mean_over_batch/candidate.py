import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def weighted_nll_kernel(
    lp_ptr, tgt_ptr, w_ptr, out_ptr, n_rows, stride_r, stride_c, BLOCK: tl.constexpr
):
    rows = tl.arange(0, BLOCK)
    mask = rows < n_rows
    tgt = tl.load(tgt_ptr + rows, mask=mask, other=0)
    w = tl.load(w_ptr + tgt, mask=mask, other=0.0)
    lp = tl.load(lp_ptr + rows * stride_r + tgt * stride_c, mask=mask, other=0.0)
    total = tl.sum(-w * lp, axis=0)
    tl.store(out_ptr, total / n_rows)


class ModelNew(nn.Module):
    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.register_buffer("weight", torch.linspace(0.2, 2.0, num_classes))

    def forward(self, log_probs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        target = target.contiguous()
        n_rows = log_probs.shape[0]
        out = torch.empty((), device=log_probs.device, dtype=log_probs.dtype)
        BLOCK = triton.next_power_of_2(n_rows)
        weighted_nll_kernel[(1,)](
            log_probs, target, self.weight, out, n_rows, log_probs.stride(0), log_probs.stride(1), BLOCK=BLOCK
        )
        return out
