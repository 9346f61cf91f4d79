import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def weighted_ce_fwd_kernel(
    logits_ptr, target_ptr, weight_ptr, loss_ptr,
    n_classes, stride_row, stride_col,
    inv_temp,
    BLOCK_C: tl.constexpr,
):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row * stride_row

    # pass 1: running max of the scaled logits
    m_vec = tl.full((BLOCK_C,), float("-inf"), tl.float32)
    for c0 in range(0, n_classes, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        z = tl.load(row_ptr + cols * stride_col, mask=cols < n_classes, other=float("-inf")).to(tl.float32)
        m_vec = tl.maximum(m_vec, z * inv_temp)
    m = tl.max(m_vec, axis=0)

    # pass 2: sum of exp(z - m)
    s_vec = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for c0 in range(0, n_classes, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        z = tl.load(row_ptr + cols * stride_col, mask=cols < n_classes, other=float("-inf")).to(tl.float32)
        s_vec += tl.exp(z * inv_temp - m)
    lse = m + tl.log(tl.sum(s_vec, axis=0))

    # -w[y] * log_softmax(z)[y]
    tgt = tl.load(target_ptr + row)
    z_t = tl.load(row_ptr + tgt * stride_col).to(tl.float32) * inv_temp
    w_t = tl.load(weight_ptr + tgt).to(tl.float32)
    tl.store(loss_ptr + row, w_t * (lse - z_t))


def weighted_cross_entropy(logits, targets, weight, temperature):
    n_rows, n_classes = logits.shape
    targets = targets.contiguous()
    row_loss = torch.empty(n_rows, device=logits.device, dtype=torch.float32)
    weighted_ce_fwd_kernel[(n_rows,)](
        logits, targets, weight, row_loss,
        n_classes, logits.stride(0), logits.stride(1),
        1.0 / temperature,
        BLOCK_C=64,
    )
    return row_loss.sum() / weight[targets].sum()


class ModelNew(nn.Module):
    def __init__(self, num_classes: int, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature
        self.register_buffer("class_weight", torch.rand(num_classes) + 0.5)

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return weighted_cross_entropy(logits, targets, self.class_weight, self.temperature)
