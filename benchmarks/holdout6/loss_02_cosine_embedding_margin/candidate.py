import torch
import torch.nn as nn
import triton
import triton.language as tl

# ATen adds this to both squared magnitudes before the sqrt.
_EPSILON = 1e-12


@triton.autotune(
    configs=[triton.Config({"BLOCK_B": 16, "BLOCK_D": 128}, num_warps=4, num_stages=2)],
    key=["D"],
)
@triton.jit
def cosine_embedding_loss_kernel(
    in1_ptr,
    in2_ptr,
    target_ptr,
    loss_ptr,
    B,
    D,
    stride_in1,
    stride_in2,
    margin,
    scale,
    eps,
    REDUCE: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    rows = pid * BLOCK_B + tl.arange(0, BLOCK_B)
    row_mask = rows < B

    # Accumulators for <a, b>, |a|^2 and |b|^2 of each row in the block.
    dot = tl.zeros([BLOCK_B], dtype=tl.float32)
    sq1 = tl.zeros([BLOCK_B], dtype=tl.float32)
    sq2 = tl.zeros([BLOCK_B], dtype=tl.float32)

    for d_start in range(0, D, BLOCK_D):
        cols = d_start + tl.arange(0, BLOCK_D)
        col_mask = cols < D
        a = tl.load(
            in1_ptr + rows[:, None] * stride_in1 + cols[None, :],
            mask=row_mask[:, None] & col_mask[None, :],
            other=0.0,
        ).to(tl.float32)
        b = tl.load(
            in2_ptr + rows[:, None] * stride_in2 + cols[None, :],
            mask=row_mask[:, None],
            other=0.0,
        ).to(tl.float32)
        dot += tl.sum(a * b, axis=1)
        sq1 += tl.sum(a * a, axis=1)
        sq2 += tl.sum(b * b, axis=1)

    cos = dot / tl.sqrt((sq1 + eps) * (sq2 + eps))

    y = tl.load(target_ptr + rows, mask=row_mask, other=0)
    pos_loss = 1.0 - cos
    neg_loss = tl.maximum(cos - margin, 0.0)
    loss = tl.where(y == 1, pos_loss, tl.where(y == -1, neg_loss, 0.0))
    loss = tl.where(row_mask, loss, 0.0)

    if REDUCE:
        tl.atomic_add(loss_ptr, tl.sum(loss, axis=0) * scale)
    else:
        tl.store(loss_ptr + rows, loss, mask=row_mask)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    assert input1.shape == input2.shape and input1.dim() == 2
    assert target.shape == (input1.shape[0],)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")

    input1 = input1.contiguous()
    input2 = input2.contiguous()
    target = target.contiguous()
    B, D = input1.shape

    if reduction == "none":
        out = torch.empty(B, device=input1.device, dtype=torch.float32)
    else:
        out = torch.zeros(1, device=input1.device, dtype=torch.float32)
    scale = 1.0 / B if reduction == "mean" else 1.0

    grid = lambda meta: (triton.cdiv(B, meta["BLOCK_B"]),)
    cosine_embedding_loss_kernel[grid](
        input1,
        input2,
        target,
        out,
        B,
        D,
        input1.stride(0),
        input2.stride(0),
        float(margin),
        scale,
        _EPSILON,
        REDUCE=reduction != "none",
    )
    if reduction == "none":
        return out.to(input1.dtype)
    return out.reshape(()).to(input1.dtype)


class ModelNew(nn.Module):
    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__()
        self.margin = margin
        self.reduction = reduction

    def forward(self, input1: torch.Tensor, input2: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)
