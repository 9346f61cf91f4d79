"""Control: the brief's strict elementwise bound also rejects pure-torch fp32 computations that merely
sum in a different order, so its x100 failures on the scan/matmul cases are rounding, not bugs."""
import torch


def strict_ratio(c, r32, r64):
    bound = 1e-4 + 1e-4 * r64.abs() + 10 * (r32.double() - r64).abs()
    return float(((c.double() - r64).abs() / bound).max())


for s in range(4):
    torch.manual_seed(s)
    x = torch.randn(16, 4096) * 100
    r32, r64 = torch.cumsum(x, 1), torch.cumsum(x.double(), 1)
    parts, carry = [], torch.zeros(16, 1)
    for i in range(0, 4096, 512):
        blk = torch.cumsum(x[:, i:i + 512], 1) + carry
        parts.append(blk)
        carry = carry + x[:, i:i + 512].sum(1, keepdim=True)
    alt = torch.cat(parts, 1)
    torch.manual_seed(s)
    A, B = torch.randn(200, 300) * 100, torch.randn(300, 160) * 100
    m32, m64 = A @ B, A.double() @ B.double()
    malt = sum(A[:, k:k + 32] @ B[k:k + 32] for k in range(0, 300, 32))
    print(f"seed {s}: torch blocked cumsum (x100) strict err/bound = {strict_ratio(alt, r32, r64):.3g};"
          f" torch K-chunked matmul (x100) strict err/bound = {strict_ratio(malt, m32, m64):.3g}")
