import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def smoothed_ce_kernel(
    logits_ptr, target_ptr, loss_ptr, C, stride_row, stride_col, stride_t, eps, BLOCK_C: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    mask = cols < C
    x = tl.load(logits_ptr + row * stride_row + cols * stride_col, mask=mask, other=float("-inf"))
    x = x.to(tl.float32)
    x_max = tl.max(x, axis=0)
    lse = x_max + tl.log(tl.sum(tl.exp(x - x_max), axis=0))
    logp = tl.where(mask, x - lse, 0.0)

    t = tl.load(target_ptr + row * stride_t)
    logp_t = tl.sum(tl.where(cols == t, logp, 0.0), axis=0)
    nll = -logp_t
    # smoothing mass spread over the other classes
    smooth = -tl.sum(logp, axis=0) / C
    tl.store(loss_ptr + row, (1.0 - eps) * nll + eps * smooth)


class ModelNew(nn.Module):
    def __init__(self, label_smoothing: float) -> None:
        super().__init__()
        self.label_smoothing = label_smoothing

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        B, C = logits.shape
        losses = torch.empty(B, device=logits.device, dtype=torch.float32)
        smoothed_ce_kernel[(B,)](
            logits, target, losses, C,
            logits.stride(0), logits.stride(1), target.stride(0),
            self.label_smoothing,
            BLOCK_C=triton.next_power_of_2(C),
        )
        return losses.mean().to(logits.dtype)
