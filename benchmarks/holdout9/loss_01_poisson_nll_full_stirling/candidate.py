import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@triton.jit
def _stirling_term(t):
    # Stirling approximation of log(t!) used when full=True:
    #   t*log(t) - t + 0.5*log(2*pi*t)
    safe_t = tl.where(t > 0, t, 1.0)
    approx = safe_t * tl.log(safe_t) - safe_t + 0.5 * tl.log(2.0 * 3.141592653589793 * safe_t)
    return tl.where(t > 0, approx, 0.0)


@triton.jit
def poisson_nll_partial_kernel(
    inp_ptr, tgt_ptr, partial_ptr, out_ptr,
    n_elements, eps,
    LOG_INPUT: tl.constexpr, FULL: tl.constexpr, WRITE_ELEMS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements

    x = tl.load(inp_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(tgt_ptr + offsets, mask=mask, other=0.0).to(tl.float32)

    if LOG_INPUT:
        loss = tl.exp(x) - t * x
    else:
        loss = x - t * tl.log(x + eps)

    if FULL:
        loss += _stirling_term(t)

    if WRITE_ELEMS:
        tl.store(out_ptr + offsets, loss, mask=mask)
    else:
        # one partial sum per program, finished by the second kernel
        block_sum = tl.sum(loss, axis=0)
        tl.store(partial_ptr + pid, block_sum)


@triton.jit
def finalize_sum_kernel(partial_ptr, result_ptr, n_partials, scale, BLOCK_P: tl.constexpr):
    acc = tl.zeros((BLOCK_P,), dtype=tl.float32)
    for start in range(0, n_partials, BLOCK_P):
        idx = start + tl.arange(0, BLOCK_P)
        acc += tl.load(partial_ptr + idx, mask=idx < n_partials, other=0.0)
    total = tl.sum(acc, axis=0) * scale
    tl.store(result_ptr, total)


def poisson_nll_triton(log_rate, target, log_input=True, full=False, eps=1e-8, reduction="mean"):
    assert log_rate.shape == target.shape, "input and target must have the same shape"
    x = log_rate.contiguous().view(-1)
    t = target.contiguous().view(-1)
    n = x.numel()

    BLOCK = 1024
    num_blocks = triton.cdiv(n, BLOCK)
    grid = (num_blocks,)

    if reduction == "none":
        out = torch.empty_like(x)
        poisson_nll_partial_kernel[grid](
            x, t, out, out, n, eps,
            LOG_INPUT=log_input, FULL=full, WRITE_ELEMS=True, BLOCK=BLOCK,
        )
        return out.view(log_rate.shape)

    partials = torch.empty(num_blocks, device=x.device, dtype=torch.float32)
    poisson_nll_partial_kernel[grid](
        x, t, partials, partials, n, eps,
        LOG_INPUT=log_input, FULL=full, WRITE_ELEMS=False, BLOCK=BLOCK,
    )

    result = torch.empty((), device=x.device, dtype=log_rate.dtype)
    scale = 1.0 / n if reduction == "mean" else 1.0
    BLOCK_P = min(triton.next_power_of_2(num_blocks), 256)
    finalize_sum_kernel[(1,)](partials, result, num_blocks, scale, BLOCK_P=BLOCK_P)
    return result


class ModelNew(nn.Module):
    def __init__(self, log_input: bool = True, full: bool = True, eps: float = 1e-8, reduction: str = "mean") -> None:
        super().__init__()
        self.log_input = log_input
        self.full = full
        self.eps = eps
        self.reduction = reduction

    def forward(self, log_rate: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return poisson_nll_triton(
            log_rate, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )
