import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _uniform_bucket(vals, low, inv_step, n_bnd):
    # the boundaries are evenly spaced (linspace), so torch.bucketize(right=False) reduces to
    # ceil((x - low) / step), clamped to the valid range [0, n_bnd]
    t = tl.ceil((vals - low) * inv_step)
    t = tl.minimum(tl.maximum(t, 0.0), n_bnd * 1.0)
    return t.to(tl.int32)


@triton.jit
def bucket_embed_sum_kernel(
    x_ptr, emb_ptr, out_ptr,
    n_feat, n_bnd, emb_dim, low, inv_step,
    stride_xb, stride_xf, stride_eb, stride_ob,
    BLOCK_F: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    f_offs = tl.arange(0, BLOCK_F)
    d_offs = tl.arange(0, BLOCK_D)
    f_mask = f_offs < n_feat
    d_mask = d_offs < emb_dim

    xv = tl.load(x_ptr + pid * stride_xb + f_offs * stride_xf, mask=f_mask, other=0.0)
    bucket = _uniform_bucket(xv, low, inv_step, n_bnd)

    # gather one embedding row per feature: [BLOCK_F, BLOCK_D], then reduce over the features
    rows = tl.load(emb_ptr + bucket[:, None] * stride_eb + d_offs[None, :], mask=d_mask[None, :], other=0.0)
    acc = tl.sum(rows, axis=0)
    tl.store(out_ptr + pid * stride_ob + d_offs, acc, mask=d_mask)


class ModelNew(nn.Module):
    def __init__(self, num_buckets: int, embed_dim: int, low: float, high: float) -> None:
        super().__init__()
        self.register_buffer("boundaries", torch.linspace(low, high, num_buckets - 1))
        self.embedding = nn.Embedding(num_buckets, embed_dim)
        self.num_buckets = num_buckets
        self.low = low
        self.high = high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, F = x.shape
        weight = self.embedding.weight
        D = weight.shape[1]
        n_bnd = self.num_buckets - 1
        inv_step = (self.num_buckets - 1) / (self.high - self.low)
        out = torch.empty((B, D), device=x.device, dtype=weight.dtype)
        bucket_embed_sum_kernel[(B,)](
            x, weight, out,
            F, n_bnd, D, self.low, inv_step,
            x.stride(0), x.stride(1), weight.stride(0), out.stride(0),
            BLOCK_F=triton.next_power_of_2(F),
            BLOCK_D=triton.next_power_of_2(D),
        )
        return out
