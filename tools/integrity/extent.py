"""How many values an ATen op folds into each value it returns: the length of the reduction it performs.

The integrity gate lets a host finish a reduction its kernel did most of (summing per-block partials). Set
against the longest reduction the reference performs, this measure says how much of it the host did: a
kernel that only copies its input and leaves the whole sum to the host folds as many values on the host as
the reference does.
"""

from __future__ import annotations

from typing import Any

import torch

# Contractions: each result folds the matrix operand's last dimension (the first operand after the bias
# for the add- forms).
_CONTRACTIONS = {"mm", "bmm", "matmul", "dot", "vdot", "mv", "linear", "_scaled_mm"}
_BIASED_CONTRACTIONS = {"addmm", "addbmm", "baddbmm", "addmv"}
# Same-size outputs whose every value still depends on a whole axis.
_ALONG_DIM = {"_softmax", "_log_softmax", "softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp"}


def tensors_in(obj: Any) -> list[torch.Tensor]:
    """Every tensor in a nest of lists, tuples and dicts (an op's arguments or results)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in tensors_in(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in tensors_in(item)]
    return []


def reduction_extent(name: str, args: Any, kwargs: dict[str, Any], out: Any) -> int:
    """Values folded into each result of one op (1 for elementwise work, views and copies)."""
    if name in _CONTRACTIONS or name in _BIASED_CONTRACTIONS:
        operand = args[1] if name in _BIASED_CONTRACTIONS else args[0]
        return int(operand.shape[-1]) if isinstance(operand, torch.Tensor) and operand.dim() else 1
    if name.lstrip("_").startswith("conv") and len(args) > 1 and isinstance(args[1], torch.Tensor):
        weight = args[1]
        return max(1, weight.numel() // max(1, int(weight.shape[0]))) if weight.dim() else 1
    if name in _ALONG_DIM and args and isinstance(args[0], torch.Tensor):
        dim = args[1] if len(args) > 1 and isinstance(args[1], int) else kwargs.get("dim", -1)
        return int(args[0].shape[dim]) if args[0].dim() and isinstance(dim, int) else 1
    inputs = [t.numel() for t in tensors_in((args, kwargs))]
    outputs = [t.numel() for t in tensors_in(out) if t.numel()]
    if not inputs or not outputs:
        return 1
    return max(1, max(inputs) // min(outputs))
