import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _online_lse_update(m, s, x):
    # running max / running sum-of-exp update for one chunk of a row
    m_new = tl.maximum(m, tl.max(x, axis=0))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
    return m_new, s


@triton.jit
def distill_kl_row_kernel(
    s_ptr, t_ptr, loss_ptr,
    n_cols, s_row_stride, t_row_stride,
    inv_temp, out_scale,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0)
    s_row = s_ptr + row * s_row_stride
    t_row = t_ptr + row * t_row_stride

    # pass 1: log-sum-exp of student/T and teacher/T, chunked over the classes
    m_s = -float("inf")
    l_s = 0.0
    m_t = -float("inf")
    l_t = 0.0
    for off in range(0, n_cols, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        zs = tl.load(s_row + cols, mask=mask, other=-float("inf")).to(tl.float32) * inv_temp
        zt = tl.load(t_row + cols, mask=mask, other=-float("inf")).to(tl.float32) * inv_temp
        m_s, l_s = _online_lse_update(m_s, l_s, zs)
        m_t, l_t = _online_lse_update(m_t, l_t, zt)
    lse_s = m_s + tl.log(l_s)
    lse_t = m_t + tl.log(l_t)

    # pass 2: sum_j p_t[j] * (log p_t[j] - log p_s[j])
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        zs = tl.load(s_row + cols, mask=mask, other=0.0).to(tl.float32) * inv_temp
        zt = tl.load(t_row + cols, mask=mask, other=0.0).to(tl.float32) * inv_temp
        log_pt = zt - lse_t
        log_ps = zs - lse_s
        term = tl.exp(log_pt) * (log_pt - log_ps)
        acc += tl.where(mask, term, 0.0)

    row_kl = tl.sum(acc, axis=0)
    tl.atomic_add(loss_ptr, row_kl * out_scale)


def distillation_kl_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    if student_logits.dim() != 2 or not student_logits.is_floating_point():
        # not a (batch, classes) float input: fall back to eager PyTorch
        log_ps = torch.log_softmax(student_logits.float() / temperature, dim=-1)
        log_pt = torch.log_softmax(teacher_logits.float() / temperature, dim=-1)
        kl = (log_pt.exp() * (log_pt - log_ps)).sum() / student_logits.shape[0]
        return kl * temperature * temperature

    assert student_logits.shape == teacher_logits.shape
    student_logits = student_logits.contiguous()
    teacher_logits = teacher_logits.contiguous()
    B, C = student_logits.shape

    BLOCK_N = min(triton.next_power_of_2(C), 64)
    loss = torch.zeros(1, device=student_logits.device, dtype=torch.float32)
    # batchmean: divide the summed KL by the batch size, then undo the T^2 gradient scaling
    out_scale = temperature * temperature / B
    distill_kl_row_kernel[(B,)](
        student_logits, teacher_logits, loss,
        C, student_logits.stride(0), teacher_logits.stride(0),
        1.0 / temperature, out_scale,
        BLOCK_N=BLOCK_N,
    )
    return loss[0].to(student_logits.dtype)


class ModelNew(nn.Module):
    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
        return distillation_kl_loss(student_logits, teacher_logits, self.temperature)
