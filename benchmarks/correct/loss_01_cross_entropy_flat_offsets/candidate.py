import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_row_kernel(logits_ptr, targets_ptr, loss_ptr, n_classes, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_C)
    mask = offs < n_classes
    logits = tl.load(logits_ptr + row * n_classes + offs, mask=mask, other=float("-inf")).to(tl.float32)
    m = tl.max(logits, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(logits - m), axis=0))
    tgt = tl.load(targets_ptr + row)
    tgt_logit = tl.load(logits_ptr + row * n_classes + tgt).to(tl.float32)
    tl.store(loss_ptr + row, lse - tgt_logit)


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        n_rows, n_classes = predictions.shape
        row_loss = torch.empty(n_rows, device=predictions.device, dtype=torch.float32)
        BLOCK_C = triton.next_power_of_2(n_classes)
        ce_row_kernel[(n_rows,)](predictions, targets, row_loss, n_classes, BLOCK_C=BLOCK_C)
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        mean_kernel[(1,)](row_loss, out, n_rows, BLOCK=128)
        return out
