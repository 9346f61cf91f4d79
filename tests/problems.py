"""Small real problems for tests: a KernelBench-style reference and Triton candidates with known defects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_medic.tools.evaluation.crashes import explain_output
from kernel_medic.tools.repair.rules.base import RuleContext

SCALE_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


rows = 4
n = 1000


def get_inputs():
    return [torch.randn(rows, n)]


def get_init_inputs():
    return []
"""

# The same operator with its constant behind a method: the offline engine reads the reference's forward
# expression (the reference-formula rule) but not helpers it calls, so a candidate with a wrong constant stays
# unrepaired offline while an LLM (or a person) can still fix it.
OPAQUE_SCALE_REFERENCE = SCALE_REFERENCE.replace(
    "    def forward(self, x):\n        return x * 2.0\n",
    "    def forward(self, x):\n        return self.double(x)\n\n"
    "    def double(self, x):\n        return x * 2.0\n",
)
# A scale of 2.5 behind a method: no rule reads it and no generic constant edit of a candidate's 3.0 reaches
# it (the edit space tries 0, 1, 0.5, 2 and the reference's call arguments), so such a case stays unrepaired.
UNREACHABLE_SCALE_REFERENCE = OPAQUE_SCALE_REFERENCE.replace("return x * 2.0", "return x * 2.5")


SCALE_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
"""


def scale_candidate(*replacements: tuple[str, str]) -> str:
    """The correct scale candidate with exact text replacements applied (each must match)."""
    source = SCALE_CANDIDATE
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


# Two seeds, no value or shape variants: a full tier of two cases, for tests that only need a repair to run.
LIGHT_TOML = "seeds = [0, 1]\nvalue_variants = false\nautomatic_shapes = false\n"


def write_problem(
    folder: Path, candidate: str, reference: str = SCALE_REFERENCE, toml: str | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference)
    (folder / "candidate.py").write_text(candidate)
    if toml is not None:
        (folder / "problem.toml").write_text(toml)
    return folder


def node_state(folder: Path, source: str, **extra: Any) -> dict[str, Any]:
    """What the graph hands a node for the problem in `folder`, with `source` as the candidate so far."""
    return {
        "reference_path": str(folder / "reference.py"),
        "candidate_path": str(folder / "candidate.py"),
        "original_source": source,
        "best_source": source,
        "config": {"workers": 1},
        **extra,
    }


# A padding op whose wrapper sizes its output with one side of its padding: the wrong shape.
PAD_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, padding):
        super().__init__()
        self.padding = padding

    def forward(self, x):
        return torch.nn.functional.pad(x, (self.padding, self.padding)) * 2.0


def get_inputs():
    return [torch.randn(8, 100)]


def get_init_inputs():
    return [3]
"""

PAD_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pad_kernel(x_ptr, out_ptr, L, L_out, P, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    src = offs - P
    inside = (src >= 0) & (src < L) & (offs < L_out)
    x = tl.load(x_ptr + row * L + src, mask=inside, other=0.0)
    tl.store(out_ptr + row * L_out + offs, x * 2.0, mask=offs < L_out)


class ModelNew(nn.Module):
    def __init__(self, padding):
        super().__init__()
        self.padding = padding

    def forward(self, x):
        x = x.contiguous()
        B, L = x.shape
        L_out = L + self.padding
        out = torch.empty(B, L_out, device=x.device, dtype=x.dtype)
        pad_kernel[(B, triton.cdiv(L_out, 128))](x, out, L, L_out, self.padding, BLOCK=128)
        return out
"""

# A transposed convolution sized without its padding: the size is computed in `forward` and allocated by the
# launcher it is passed to (CONVT_CANDIDATE), or written inside the allocation (CONVT_INLINE_CANDIDATE).
CONVT_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 4, 17)]


def get_init_inputs():
    return [4, 3, 3, 3, 1]
"""

CONVT_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def convt1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C_in, L_in, C_out, L_out, stride, padding,
                   K: tl.constexpr, BLOCK: tl.constexpr):
    pid_nc = tl.program_id(0)
    n = pid_nc // C_out
    co = pid_nc % C_out
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for ci in range(0, C_in):
        for k in range(K):
            num = offs + padding - k
            i = num // stride
            ok = (num >= 0) & (num % stride == 0) & (i < L_in) & (offs < L_out)
            xv = tl.load(x_ptr + n * C_in * L_in + ci * L_in + i, mask=ok, other=0.0)
            wv = tl.load(w_ptr + ci * C_out * K + co * K + k)
            acc += xv * wv
    acc += tl.load(b_ptr + co)
    tl.store(out_ptr + n * C_out * L_out + co * L_out + offs, acc, mask=offs < L_out)


def launch(x, weight, bias, L_out, stride, padding):
    N, C_in, L_in = x.shape
    C_out, K = weight.shape[1], weight.shape[2]
    out = torch.empty(N, C_out, L_out, device=x.device, dtype=x.dtype)
    grid = (N * C_out, triton.cdiv(L_out, 32))
    convt1d_kernel[grid](x, weight, bias, out, C_in, L_in, C_out, L_out, stride, padding, K=K, BLOCK=32)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = x.contiguous()
        stride, padding = self.conv.stride[0], self.conv.padding[0]
        K = self.conv.kernel_size[0]
        L_out = (x.shape[2] - 1) * stride + K
        return launch(x, self.conv.weight, self.conv.bias, L_out, stride, padding)
"""

CONVT_INLINE_CANDIDATE = CONVT_CANDIDATE[: CONVT_CANDIDATE.index("def launch")] + """\
def conv_transpose1d_triton(x, weight, bias, stride, padding):
    x = x.contiguous()
    N, C_in, L_in = x.shape
    C_out, K = weight.shape[1], weight.shape[2]
    out = torch.empty((N, C_out, (L_in - 1) * stride + K), device=x.device, dtype=x.dtype)
    L_out = out.shape[2]
    grid = (N * C_out, triton.cdiv(L_out, 32))
    convt1d_kernel[grid](x, weight, bias, out, C_in, L_in, C_out, L_out, stride, padding, K=K, BLOCK=32)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return conv_transpose1d_triton(x, self.conv.weight, self.conv.bias, self.conv.stride[0],
                                       self.conv.padding[0])
"""


# A strided convolution whose input index lost its stride, in both dimensions (`oh - pad + kh`).
CONV2D_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 3, 13, 11)]


def get_init_inputs():
    return [3, 4, 3, 2, 1]
"""

CONV2D_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C_in, H, W, C_out, H_out, W_out, stride, pad,
                  KS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = pid // C_out
    co = pid % C_out
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    oh = offs // W_out
    ow = offs % W_out
    valid = offs < H_out * W_out
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for ci in range(C_in):
        for kh in range(KS):
            for kw in range(KS):
                ih = oh - pad + kh
                iw = ow - pad + kw
                inside = valid & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                xv = tl.load(x_ptr + ((n * C_in + ci) * H + ih) * W + iw, mask=inside, other=0.0)
                wv = tl.load(w_ptr + ((co * C_in + ci) * KS + kh) * KS + kw)
                acc += xv * wv
    acc += tl.load(b_ptr + co)
    tl.store(y_ptr + (n * C_out + co) * H_out * W_out + offs, acc, mask=valid)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = x.contiguous()
        N, C_in, H, W = x.shape
        C_out = self.conv.out_channels
        KS = self.conv.kernel_size[0]
        s, p = self.conv.stride[0], self.conv.padding[0]
        H_out = (H + 2 * p - KS) // s + 1
        W_out = (W + 2 * p - KS) // s + 1
        y = torch.empty(N, C_out, H_out, W_out, device=x.device, dtype=x.dtype)
        grid = (N * C_out, triton.cdiv(H_out * W_out, 64))
        conv2d_kernel[grid](x, self.conv.weight, self.conv.bias, y, C_in, H, W, C_out, H_out, W_out, s, p,
                            KS=KS, BLOCK=64)
        return y
"""

# A 3-norm that cubes signed values: the reference's `vector_norm` takes their absolute value first.
PNORM_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return torch.linalg.vector_norm(x, ord=self.p, dim=1)


def get_inputs():
    return [torch.randn(16, 300)]


def get_init_inputs():
    return [3.0]
"""

PNORM_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pnorm_kernel(x_ptr, out_ptr, n_cols, p, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        acc += x * x * x
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, tl.exp(tl.log(total) / p))


class ModelNew(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        pnorm_kernel[(rows,)](x, out, cols, self.p, BLOCK=128)
        return out
"""

# A fused linear + ReLU that applies the ReLU before the bias (a load between the two updates).
LINEAR_RELU_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(24, 40)]


def get_init_inputs():
    return [40, 36]
"""

LINEAR_RELU_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a_mask = (rm[:, None] < M) & (rk[None, :] < K)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=a_mask, other=0.0)
        b_mask = (rn[None, :] < N) & (rk[:, None] < K)
        b = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
    acc = tl.maximum(acc, 0.0)
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    acc = acc + bias[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.out_features
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        linear_relu_kernel[grid](x, self.linear.weight, self.linear.bias, y, M, N, K,
                                 BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        return y
"""

# addcmul with its value scaling the whole sum instead of the product.
ADDCMUL_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x, t1, t2):
        return torch.addcmul(x, t1, t2, value=self.value)


def get_inputs():
    return [torch.randn(8, 129), torch.randn(8, 129), torch.randn(8, 129)]


def get_init_inputs():
    return [0.5]
"""

ADDCMUL_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def addcmul_kernel(x_ptr, a_ptr, b_ptr, out_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    out = (x + a * b) * value
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x, t1, t2):
        x, t1, t2 = x.contiguous(), t1.contiguous(), t2.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        addcmul_kernel[(triton.cdiv(n, 256),)](x, t1, t2, out, n, self.value, BLOCK=256)
        return out
"""

def convt_context(candidate: str) -> RuleContext:
    """The crash of a CONVT candidate: the reference's length is 49 (stride 3, padding 1, kernel 3, 17 in),
    the candidate's, without the padding, 51."""
    got, want = [([2, 3, 51], "float32")], [([2, 3, 49], "float32")]
    crash = explain_output("shape_mismatch", candidate, got, want, [])
    return RuleContext.from_reference(CONVT_REFERENCE, {"crash": crash})


# A row log-sum-exp whose stable path (the row's max subtracted) hangs on a flag the wrapper computes from the
# dtype: in float32 exp overflows once values pass 88, which only the large-magnitude cases reach.
LSE_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.logsumexp(x, dim=1)


def get_inputs():
    return [torch.randn(6, 40)]


def get_init_inputs():
    return []
"""

FLAGGED_LSE_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def lse_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, STABLE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    if STABLE:
        m = tl.max(x, axis=0)
    else:
        m = 0.0
    e = tl.exp(x - m)
    total = tl.sum(e, axis=0)
    tl.store(out_ptr + row, tl.log(total) + m)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device)
        block = triton.next_power_of_2(x.shape[1])
        stable = x.dtype != torch.float32
        lse_rows[(x.shape[0],)](x, out, x.shape[1], BLOCK=block, STABLE=stable)
        return out
"""
