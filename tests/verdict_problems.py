"""Real problems for the verdict tests: correct kernels a strict judge must not call broken, and bugs it must
still catch (a long-K matmul at large magnitudes, a long exclusive scan, a power-of-2-only attention, a
contiguous-only kernel, a half-precision accumulator)."""

from __future__ import annotations

MATMUL_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 48
K = 512
N = 40
scale = SCALE


def get_inputs():
    return [torch.randn(M, K) * scale, torch.randn(K, N) * scale]


def get_init_inputs():
    return []
"""

MATMUL_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BM=32, BN=32, BK=32)
        return c
"""

# Drops the last partial K tile: wrong whenever K is not a multiple of BK (K = 500 here).
MATMUL_DROPS_K_TAIL = MATMUL_CANDIDATE.replace(
    "for k0 in range(0, K, BK):", "for k0 in range(0, K - BK + 1, BK):"
)

EXCLUSIVE_SCAN_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1) - x


rows = 4
n = 4096


def get_inputs():
    return [torch.randn(rows, n) * 4.0]


def get_init_inputs():
    return []
"""

# An exclusive scan computed directly (the running total before each element): correct, but it never forms
# cumsum(x) and subtracts x again, so it rounds differently from the reference on long rows.
EXCLUSIVE_SCAN_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exclusive_scan_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
        inclusive = tl.cumsum(x, axis=0)
        tl.store(out_ptr + row * stride + offs, carry + inclusive - x, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        exclusive_scan_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=1024)
        return out
"""

ATTENTION_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-1, -2)) / (q.shape[-1] ** 0.5)
        return torch.matmul(torch.softmax(scores, dim=-1), v)


batch = 2
seq = 16
head_dim = 32


def get_inputs():
    return [torch.randn(batch, seq, head_dim) for _ in range(3)]


def get_init_inputs():
    return []
"""

# One program per (batch, query row); the head dimension is a compile-time block with no mask, so the kernel
# is correct for the problem's power-of-2 head_dim and cannot compile for 29 or 31.
ATTENTION_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def attention_row_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale,
                         HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr):
    b = tl.program_id(0)
    i = tl.program_id(1)
    d = tl.arange(0, HEAD_DIM)
    s = tl.arange(0, BLOCK_S)
    base = b * seq * HEAD_DIM
    q = tl.load(q_ptr + base + i * HEAD_DIM + d)
    kv_mask = s[:, None] < seq
    k = tl.load(k_ptr + base + s[:, None] * HEAD_DIM + d[None, :], mask=kv_mask, other=0.0)
    scores = tl.sum(k * q[None, :], axis=1) * scale
    scores = tl.where(s < seq, scores, -float("inf"))
    p = tl.exp(scores - tl.max(scores, axis=0))
    p = p / tl.sum(p, axis=0)
    v = tl.load(v_ptr + base + s[:, None] * HEAD_DIM + d[None, :], mask=kv_mask, other=0.0)
    tl.store(o_ptr + base + i * HEAD_DIM + d, tl.sum(p[:, None] * v, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        B, S, D = q.shape
        out = torch.empty_like(q)
        attention_row_kernel[(B, S)](q, k, v, out, S, 1.0 / (D ** 0.5), HEAD_DIM=D,
                                     BLOCK_S=triton.next_power_of_2(S))
        return out
"""

ROWSUM_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)


rows = 8
n = 1000


def get_inputs():
    return [torch.randn(rows, n)]


def get_init_inputs():
    return []
"""

# Indexes rows as row * n: right for the contiguous inputs the problem makes, wrong for strided storage.
ROWSUM_CONTIGUOUS_ONLY = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        rowsum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=256)
        return out
"""

HALF_MEAN_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.mean(dim=1)


rows = 4
n = 1024


def get_inputs():
    return [torch.randn(rows, n, dtype=torch.float16)]


def get_init_inputs():
    return []
"""

HALF_MEAN_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n, other=0.0)
    total = tl.sum(x.to(tl.ACC), axis=0)
    tl.store(out_ptr + row, (total / n).to(tl.float16))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        block = triton.next_power_of_2(x.shape[1])
        row_mean_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=block)
        return out
"""

# A reference that updates an input in place (TritonBench's `y.copy_(...)` operators): the update is part of
# what it computes, so a candidate must leave the input as the reference does, and only then.
IN_PLACE_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        y.copy_(x * 2.0)
        return y + 1.0


def get_inputs():
    return [torch.randn(4, 1000), torch.randn(4, 1000)]


def get_init_inputs():
    return []
"""

IN_PLACE_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def update_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2.0, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        update_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
"""
