import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _hinge(z):
    return tl.maximum(z, 0.0)


@triton.jit
def margin_rank_tile_kernel(
    a_ptr, b_ptr, y_ptr, partial_ptr,
    n_cols,
    stride_a, stride_b, stride_y,
    margin,
    BLOCK_N: tl.constexpr,
):
    # 2-D launch: axis 0 -> query row, axis 1 -> chunk of pairs inside that row
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    n_chunks = tl.num_programs(1)

    cols = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
    valid = cols < n_cols

    a = tl.load(a_ptr + row * stride_a + cols, mask=valid, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + row * stride_b + cols, mask=valid, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + row * stride_y + cols, mask=valid, other=0.0).to(tl.float32)

    # loss_i = max(0, -y * (a - b)) + margin
    per_pair = _hinge(-y * (a - b)) + margin
    per_pair = tl.where(valid, per_pair, 0.0)

    tl.store(partial_ptr + row * n_chunks + chunk, tl.sum(per_pair, axis=0))


@triton.jit
def reduce_partials_kernel(partial_ptr, out_ptr, n_partials, inv_count, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    vals = tl.load(partial_ptr + offs, mask=offs < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(vals, axis=0) * inv_count)


def margin_ranking_loss_triton(a, b, y, margin=0.0, reduction="mean"):
    # broadcast the label if it comes as a single row / column
    if y.shape != a.shape:
        y = y.expand_as(a)
    a2 = a.reshape(-1, a.shape[-1]).contiguous()
    b2 = b.reshape(-1, b.shape[-1]).contiguous()
    y2 = y.reshape(-1, y.shape[-1]).contiguous()
    n_rows, n_cols = a2.shape

    BLOCK_N = 128
    chunks_per_row = max(n_cols // BLOCK_N, 1)
    n_partials = n_rows * triton.cdiv(n_cols, BLOCK_N)
    partials = torch.empty(n_partials, device=a.device, dtype=torch.float32)

    margin_rank_tile_kernel[(n_rows, chunks_per_row)](
        a2, b2, y2, partials,
        n_cols,
        a2.stride(0), b2.stride(0), y2.stride(0),
        float(margin),
        BLOCK_N=BLOCK_N,
    )

    out = torch.empty((), device=a.device, dtype=a.dtype)
    inv = 1.0 / (n_rows * n_cols) if reduction == "mean" else 1.0
    BLOCK = triton.next_power_of_2(n_partials)
    reduce_partials_kernel[(1,)](partials, out, n_partials, inv, BLOCK=BLOCK)
    return out


class ModelNew(nn.Module):
    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__()
        self.margin = margin
        self.reduction = reduction

    def forward(self, scores_a: torch.Tensor, scores_b: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        return margin_ranking_loss_triton(scores_a, scores_b, label, margin=self.margin, reduction=self.reduction)
