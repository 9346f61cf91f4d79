"""Mismatch analysis: how exactly a candidate kernel's output differs from the reference output.

Everything here is deterministic CPU tensor code. Findings (a spatial pattern of the wrong elements and
value relationships such as "candidate = 0.5 x reference") are only reported when they hold on the data,
because a repair agent reasons from them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch

Verdict = Literal["pass", "mismatch", "shape_mismatch", "dtype_mismatch"]


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


_EXACT = Tolerance(0.0, 0.0)
_WIDE = Tolerance(1e-4, 1e-4)
_HALF = Tolerance(1e-2, 1e-2)

DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": _WIDE,
    "float32": _WIDE,
    "float16": _HALF,
    "bfloat16": _HALF,
    "complex128": _WIDE,
    "complex64": _WIDE,
    "bool": _EXACT,
    "uint8": _EXACT,
    "uint16": _EXACT,
    "uint32": _EXACT,
    "uint64": _EXACT,
    "int8": _EXACT,
    "int16": _EXACT,
    "int32": _EXACT,
    "int64": _EXACT,
}

# "Most" of a region must be wrong before the region is named as the place of the errors.
_MOST = 0.6
_TAIL_MOST = 0.8
# A relationship must hold on this share of the compared elements (a few coincidences are tolerated).
_HOLDS = 0.99
_MIN_ELEMS = 4
_MIN_CORR_ELEMS = 32
_CAP = 20
_BLOCKS = tuple(2**p for p in range(12, 3, -1))  # 4096 .. 16, largest first
_MAX_PERIOD = 64
_MAX_SHIFT = 4
_HUGE = 1e30


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tolerance_for(dtype: torch.dtype, overrides: Mapping[str, Tolerance] | None = None) -> Tolerance:
    """Tolerance for outputs of `dtype`; `overrides` is keyed by dtype name ("float16" or "torch.float16")."""
    name = _dtype_name(dtype)
    for key in (name, f"torch.{name}"):
        if overrides and key in overrides:
            return overrides[key]
    if name in DEFAULT_TOLERANCES:
        return DEFAULT_TOLERANCES[name]
    if dtype.is_floating_point:
        # float8 and friends: about one unit in the last place of a 3-bit mantissa
        return Tolerance(1.25e-1, 1.25e-1) if dtype.itemsize <= 1 else _HALF
    if dtype.is_complex:
        return _WIDE
    return _EXACT


@dataclass
class Comparison:
    verdict: Verdict
    numel: int
    correct: int
    max_abs_err: float
    max_rel_err: float
    mismatch_fraction: float
    nan_count: int
    inf_count: int
    ref_nan_count: int
    ref_inf_count: int
    pattern: str
    pattern_detail: dict[str, Any]
    relationships: list[str]
    # Context for describe(); additions to the contract, all defaulted.
    candidate_shape: list[int] = field(default_factory=list)
    reference_shape: list[int] = field(default_factory=list)
    candidate_dtype: str = ""
    reference_dtype: str = ""
    nan_where_ref_finite: int = 0
    inf_where_ref_finite: int = 0
    # ||candidate - reference|| / ||reference|| over the finite reference entries; -1 when not comparable
    # (shape, NaN where the reference is finite). A gradient where the share of correct elements has none.
    rel_l2: float = -1.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------- helpers


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.complex128) if t.is_complex() else t.to(torch.float64)


def _count(pred: torch.Tensor) -> int:
    return int(pred.sum().item())


def _nonfinite_counts(t: torch.Tensor) -> tuple[int, int]:
    if not (t.is_floating_point() or t.is_complex()):
        return 0, 0
    return _count(torch.isnan(t)), _count(torch.isinf(t))


def _close(
    a: torch.Tensor, b: torch.Tensor, tol: Tolerance, slack: torch.Tensor | None = None
) -> torch.Tensor:
    """torch.isclose(a, b, rtol, atol, equal_nan=True), several times faster on CPU; `slack` widens the bar
    per element (the reference's own rounding error, see numerics.py)."""
    diff = (a - b).abs()
    bar = tol.atol + tol.rtol * b.abs()
    ok = diff <= (bar if slack is None else bar + slack)
    ok &= torch.isfinite(diff)  # an infinity is only close to the same infinity (the == below)
    ok |= a == b
    ok |= torch.isnan(a) & torch.isnan(b)
    return ok


def _share(mask: torch.Tensor) -> float:
    return float(mask.double().mean().item()) if mask.numel() else 0.0


def _thin(t: torch.Tensor, limit: int = 16384) -> torch.Tensor:
    """A strided, evenly spread view of about `limit` elements, for cheap pre-checks on big tensors."""
    if t.numel() <= limit or t.ndim == 0:
        return t
    dim = max(range(t.ndim), key=lambda d: t.shape[d])
    step = min(t.shape[dim], -(-t.numel() // limit))
    index: list[slice] = [slice(None)] * t.ndim
    index[dim] = slice(None, None, step)
    return t[tuple(index)]


def _first_last(flat: torch.Tensor) -> tuple[int, int]:
    """First and last True position of a non-empty boolean vector with at least one True."""
    as_int = flat.to(torch.uint8)
    return int(as_int.argmax()), flat.numel() - 1 - int(as_int.flip(0).argmax())


def _explains(c: torch.Tensor, target: torch.Tensor, wrong: torch.Tensor, tol: Tolerance) -> bool:
    """True when c ~ target almost everywhere and on (nearly) all elements that are wrong against the
    reference, so the relationship explains the errors rather than restating the correct part."""
    if _share(_close(_thin(c), _thin(target), tol)) < 0.9:
        return False
    n_wrong = _count(wrong)
    if n_wrong == 0:
        return False
    hit = _close(c, target, tol)
    return _share(hit) >= _HOLDS and _count(hit & wrong) >= 0.9 * n_wrong


# ---------------------------------------------------------------------------------------------- patterns


def _tail_block(wrong: torch.Tensor) -> dict[str, Any] | None:
    """Errors confined to the last partial block along one or more axes (an unmasked / unlaunched tail)."""
    ndim = wrong.ndim
    found: list[tuple[int, int, int]] = []
    for axis in range(ndim):
        size = wrong.shape[axis]
        others = tuple(d for d in range(ndim) if d != axis)
        per_idx = wrong.sum(dim=others) if others else wrong.long()
        first = _first_last(per_idx > 0)[0]
        best: tuple[int, int] | None = None  # (start, block): latest start wins, then largest block
        for block in _BLOCKS:
            start = size // block * block
            if size % block == 0 or start == 0 or start > first:
                continue
            if best is None or start > best[0]:
                best = (start, block)
        if best is not None:
            found.append((axis, best[1], best[0]))
    if not found:
        return None
    region = wrong
    for axis, _, start in found:
        region = region.narrow(axis, start, wrong.shape[axis] - start)
    if _share(region) < _TAIL_MOST:
        return None
    axis, block, start = found[0]
    detail: dict[str, Any] = {"axis": axis, "block": block, "start": start}
    if len(found) > 1:
        detail["also"] = [{"axis": a, "block": b, "start": s} for a, b, s in found[1:]]
    return detail


def _lines(wrong2d: torch.Tensor, dim: int, key: str) -> dict[str, Any] | None:
    """Errors confined to a strict subset of whole rows (dim=1 reduced) or whole columns (dim=0)."""
    n_lines, length = wrong2d.shape[1 - dim], wrong2d.shape[dim]
    if n_lines < 2 or length < 2:
        return None
    per_line = wrong2d.sum(dim=dim)
    affected = per_line > 0
    n_affected = _count(affected)
    if n_affected == n_lines or bool((per_line[affected] < _MOST * length).any()):
        return None
    idx = torch.nonzero(affected).flatten()[:_CAP].tolist()
    return {key: idx, "count": n_affected, "of": n_lines}


def _phase_fit(hits: torch.Tensor, n: int, repeat: int) -> dict[str, Any] | None:
    """hits[p]: wrong elements at index % k == p over an index range of n, each index repeated `repeat`x."""
    k = hits.numel()
    phases = torch.nonzero(hits).flatten()
    if phases.numel() == k:
        return None
    sizes = (torch.full((k,), n // k, dtype=torch.float64) + (torch.arange(k) < n % k)) * repeat
    if float(hits[phases].sum() / sizes[phases].sum()) < _MOST:
        return None
    return {"period": k, "phases": phases[:_CAP].tolist()}


def _periodic(wrong: torch.Tensor) -> dict[str, Any] | None:
    width = wrong.shape[-1]
    per_col = wrong.reshape(-1, width).sum(dim=0).double()
    rows = wrong.numel() // width
    cols = torch.arange(width)
    for k in range(2, min(_MAX_PERIOD, width // 2) + 1):
        found = _phase_fit(torch.bincount(cols % k, weights=per_col, minlength=k), width, rows)
        if found is not None:
            return {**found, "index": "last_axis"}
    if wrong.ndim < 2:
        return None
    flat = wrong.flatten()
    n = flat.numel()
    for k in range(2, min(_MAX_PERIOD, n // 2) + 1):
        if width % k == 0:  # flattened phase equals last-axis phase, already tried
            continue
        # Cheap rejection: a prefix that already hits every phase rules k out.
        if bool((_phase_hits(flat[: 4096 * k], k) > 0).all()):
            continue
        found = _phase_fit(_phase_hits(flat, k), n, 1)
        if found is not None:
            return {**found, "index": "flat"}
    return None


def _phase_hits(flat: torch.Tensor, k: int) -> torch.Tensor:
    padded = torch.nn.functional.pad(flat.to(torch.uint8), (0, -flat.numel() % k))
    return padded.reshape(-1, k).sum(dim=0, dtype=torch.float64)


def _pattern(wrong: torch.Tensor) -> tuple[str, dict[str, Any]]:
    n_wrong = _count(wrong)
    n = wrong.numel()
    if n_wrong == 0:
        return "none", {}
    fraction = n_wrong / n
    wrong = wrong.reshape(1) if wrong.ndim == 0 else wrong
    tail = _tail_block(wrong)
    if tail is not None:
        return "tail_block", tail
    wrong2d = wrong.reshape(-1, wrong.shape[-1]) if wrong.ndim >= 2 else None
    if wrong2d is not None:
        rows = _lines(wrong2d, 1, "rows")
        if rows is not None:
            return "rows", rows
    periodic = _periodic(wrong)
    if periodic is not None:
        return "periodic", periodic
    if wrong2d is not None:
        cols = _lines(wrong2d, 0, "columns")
        if cols is not None:
            return "columns", cols
    if fraction > 0.9:
        return "everywhere", {"fraction": round(fraction, 4)}
    first, last = _first_last(wrong.flatten())
    if last + 1 < n and n_wrong >= _MOST * (last + 1):
        return "leading", {"end": last + 1}
    if first > 0 and n_wrong >= _MOST * (n - first):
        return "trailing", {"start": first}
    return "scattered", {"fraction": round(fraction, 4)}


# ---------------------------------------------------------------------------------------- relationships


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _fits(cs: torch.Tensor, target: torch.Tensor, tol: Tolerance) -> bool:
    return _share(_close(_thin(cs), _thin(target), tol)) >= 0.9 and _share(_close(cs, target, tol)) >= _HOLDS


def _constant_ratio(cs: torch.Tensor, rs: torch.Tensor, tol: Tolerance) -> str | None:
    nz = rs != 0
    if _count(nz) < _MIN_ELEMS:
        return None
    ratio = float((_thin(cs[nz], 100_000) / _thin(rs[nz], 100_000)).median())
    if not math.isfinite(ratio) or ratio in (0.0, 1.0) or not _fits(cs, ratio * rs, tol):
        return None
    return f"constant_ratio:{_fmt(ratio)}"


def _constant_offset(cs: torch.Tensor, rs: torch.Tensor, tol: Tolerance) -> str | None:
    offset = float((_thin(cs, 100_000) - _thin(rs, 100_000)).median())
    if not math.isfinite(offset) or offset == 0.0 or not _fits(cs, rs + offset, tol):
        return None
    return f"constant_offset:{_fmt(offset)}"


def _pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    x, y = x - x.mean(), y - y.mean()
    den = float(x.norm() * y.norm())
    return float((x * y).sum()) / den if den > 0 else 0.0


def _ranks(x: torch.Tensor) -> torch.Tensor:
    order = torch.argsort(x, stable=True)
    ranks = torch.empty_like(x)
    ranks[order] = torch.arange(x.numel(), dtype=x.dtype)
    return ranks


def _grows_with_magnitude(c: torch.Tensor, r: torch.Tensor, sel: torch.Tensor) -> bool:
    err = (c - r).abs()
    sel = sel & (r != 0) & (err > 0)
    if _count(sel) < _MIN_CORR_ELEMS:
        return False
    x, y = _thin(r[sel].abs(), 100_000).log(), _thin(err[sel], 100_000).log()
    if float(x.std()) < 1e-3 or float(y.std()) < 1e-3:
        return False
    return _pearson(x, y) >= 0.5 and _pearson(_ranks(x), _ranks(y)) >= 0.5


def _transposed(c: torch.Tensor, r: torch.Tensor, wrong: torch.Tensor, tol: Tolerance) -> bool:
    if r.ndim < 2 or r.shape[-1] < 2 or r.shape[-2] < 2:
        return False
    # The candidate's memory holds reference^T laid out contiguously (same as c ~ r^T when square).
    target = r.transpose(-1, -2).reshape(r.shape)
    return _explains(c, target, wrong, tol)


def _shifted(c: torch.Tensor, r: torch.Tensor, wrong: torch.Tensor, tol: Tolerance) -> str | None:
    for axis in range(r.ndim):
        size = r.shape[axis]
        for mag in range(1, _MAX_SHIFT + 1):
            if size <= 2 * mag:
                break
            for s in (mag, -mag):
                keep = size - mag
                c_lo = mag if s > 0 else 0
                r_lo = 0 if s > 0 else mag
                c_ov = c.narrow(axis, c_lo, keep)
                if _explains(c_ov, r.narrow(axis, r_lo, keep), wrong.narrow(axis, c_lo, keep), tol):
                    return f"shifted:axis={axis},k={s}"
    return None


def _rows_permuted(c: torch.Tensor, r: torch.Tensor, wrong: torch.Tensor, tol: Tolerance) -> bool:
    if r.ndim < 2:
        return False
    width = r.shape[-1]
    c2, r2, w2 = c.reshape(-1, width), r.reshape(-1, width), wrong.reshape(-1, width)
    if c2.shape[0] < 2:
        return False
    # Match rows through a random projection; the match is then verified elementwise.
    probe = torch.randn(width, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    c_sig = torch.nan_to_num(c2.real if c2.is_complex() else c2) @ probe
    r_sig = torch.nan_to_num(r2.real if r2.is_complex() else r2) @ probe
    c_order, r_order = torch.argsort(c_sig, stable=True), torch.argsort(r_sig, stable=True)
    some = torch.arange(0, c2.shape[0], max(1, c2.shape[0] * width // 16384))
    if _share(_close(c2[c_order[some]], r2[r_order[some]], tol)) < 0.9:
        return False
    target = torch.empty_like(r2)
    target[c_order] = r2[r_order]
    return _explains(c2, target, w2, tol)


def _is_region(mask: torch.Tensor) -> bool:
    """A contiguous run in flattened order or an axis-aligned box."""
    n = _count(mask)
    if n == 0:
        return False
    first, last = _first_last(mask.flatten())
    if last - first + 1 == n:
        return True
    volume = 1
    for axis in range(mask.ndim):
        others = tuple(d for d in range(mask.ndim) if d != axis)
        lo, hi = _first_last(mask.any(dim=others) if others else mask)
        volume *= hi - lo + 1
    return volume == n


def _garbage(c: torch.Tensor, r: torch.Tensor, wrong: torch.Tensor, ref_dtype: torch.dtype) -> torch.Tensor:
    mag, ref_mag = c.abs(), r.abs()
    bad = torch.isfinite(mag) & (mag > _HUGE) & (mag > 1e6 * ref_mag)
    if ref_dtype in (torch.float32, torch.float64):
        # Subnormals are rare in real fp32/fp64 results but common in uninitialised memory.
        bad |= (mag > 0) & (mag < torch.finfo(ref_dtype).tiny)
    return bad & wrong & torch.isfinite(r)


def _value_relationships(
    c: torch.Tensor, r: torch.Tensor, wrong: torch.Tensor, tol: Tolerance, ref_dtype: torch.dtype
) -> list[str]:
    found: list[str] = []
    n_wrong = _count(wrong)
    finite_wrong = wrong & torch.isfinite(c) & torch.isfinite(r)
    if not c.is_complex() and _count(finite_wrong) >= _MIN_ELEMS:
        cs, rs = c[finite_wrong], r[finite_wrong]
        ratio = offset = None
        # A candidate that is one constant on the wrong elements fits any offset; that is no relationship.
        if not _fits(cs, cs.median().expand_as(cs), tol):
            ratio, offset = _constant_ratio(cs, rs, tol), _constant_offset(cs, rs, tol)
            found += [x for x in (ratio, offset) if x is not None]
        # A constant ratio/offset already says how the error scales, and zeros are reported on their own.
        if ratio is None and offset is None and _grows_with_magnitude(c, r, finite_wrong & (c != 0)):
            found.append("grows_with_magnitude")
    untouched = torch.isnan(c) & torch.isfinite(r)
    if _is_region(untouched):
        found.append("untouched_region")
    need = min(_MIN_ELEMS, n_wrong)
    if _count(_garbage(c, r, wrong, ref_dtype)) >= max(need, 1):
        found.append("garbage_region")
    zeros = _count(wrong & (c == 0) & (r != 0) & torch.isfinite(r))
    if zeros >= max(need, 1) and zeros >= 0.25 * n_wrong:
        found.append("zero_region")
    return found


def _relationships(
    c: torch.Tensor,
    r: torch.Tensor,
    wrong: torch.Tensor,
    tol: Tolerance,
    inputs: Sequence[torch.Tensor],
    ref_dtype: torch.dtype,
) -> list[str]:
    found = _value_relationships(c, r, wrong, tol, ref_dtype)
    if _transposed(c, r, wrong, tol):
        found.append("transposed")
    shifted = _shifted(c, r, wrong, tol)
    if shifted is not None:
        found.append(shifted)
    if _rows_permuted(c, r, wrong, tol):
        found.append("rows_permuted")
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.shape == c.shape:
            if _explains(c, _wide(x.detach().cpu()), wrong, tol):
                found.append(f"equals_input:{i}")
    return found


# --------------------------------------------------------------------------------------------- compare


def _shape_relationships(
    c: torch.Tensor, r: torch.Tensor, tol: Tolerance, inputs: Sequence[torch.Tensor]
) -> list[str]:
    found: list[str] = []
    if c.numel() == r.numel():
        found.append("same_numel_different_shape")
        if c.numel() and _share(_close(c.reshape(r.shape), r, tol)) >= _HOLDS:
            found.append("reshaped")
    swapped = (*r.shape[:-2], r.shape[-1], r.shape[-2]) if r.ndim >= 2 else None
    if swapped is not None and tuple(c.shape) == swapped and c.numel():
        if _share(_close(c.transpose(-1, -2), r, tol)) >= _HOLDS:
            found.append("transposed")
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.shape == c.shape and x.numel():
            if _share(_close(c, _wide(x.detach().cpu()), tol)) >= _HOLDS:
                found.append(f"equals_input:{i}")
    return found


def _rel_l2(c: torch.Tensor, r: torch.Tensor) -> float:
    """Relative L2 distance over the entries where the reference is finite; -1 when the candidate is not
    finite there (no distance means anything past a NaN)."""
    if not (c.is_floating_point() or c.is_complex()):
        c, r = c.double(), r.double()
    finite = torch.isfinite(r)
    cf, rf = c[finite], r[finite]
    if not bool(torch.isfinite(cf).all()):
        return -1.0
    norm = float(torch.linalg.vector_norm(rf))
    err = float(torch.linalg.vector_norm(cf - rf))
    if norm == 0.0:
        return 0.0 if err == 0.0 else -1.0
    return err / norm


def distance(report: dict[str, Any]) -> float | None:
    """Mean relative L2 distance of a report's counted cases (each capped at 4; a case with none counts 4),
    or None when no case has one. Orders reports of equal score: how far the wrong numbers are."""
    cases = [c for c in report.get("cases") or [] if c.get("counted", True)]
    if not cases:
        return None
    values = [min(4.0, float(c.get("rel_l2", -1.0))) for c in cases]
    if all(v < 0 for v in values):
        return None
    return sum(4.0 if v < 0 else v for v in values) / len(values)


CLOSER = 0.75
"""A report at an equal score is closer when its distance is at most this share of the other's."""
SCORE_NOISE = 0.005
"""Shares of correct elements this close count as equal for `closer`: near 0, a few elements right by chance
(zeros where the reference is near zero) come and go with any edit."""


def closer(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether `new` is much nearer the reference than `old` at the same score (up to SCORE_NOISE), and nearer
    than an output of zeros (distance 1, so the numbers correlate with the reference): a wrong kernel with two
    bugs scores 0 before and after one is fixed, but its numbers come much closer. A fixed share of the
    distance must go, so a chain of such steps is short and noise is not progress."""
    if new.get("verdict") != "mismatch" or old.get("verdict") != "mismatch":
        return False
    if float(new.get("score", 0.0)) < float(old.get("score", 0.0)) - SCORE_NOISE:
        return False
    before, after = distance(old), distance(new)
    return before is not None and after is not None and after < 1.0 and after <= CLOSER * before


def compare(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    tol: Tolerance,
    inputs: Sequence[torch.Tensor] = (),
    slack: torch.Tensor | None = None,
) -> Comparison:
    """Compare a candidate output with the reference output and explain any difference.

    `slack`: an extra absolute tolerance per element (shaped like the reference), added to atol + rtol*|ref|.
    """
    cand, ref = candidate.detach().cpu(), reference.detach().cpu()
    nan_count, inf_count = _nonfinite_counts(cand)
    ref_nan, ref_inf = _nonfinite_counts(ref)
    context = {
        "candidate_shape": list(cand.shape),
        "reference_shape": list(ref.shape),
        "candidate_dtype": _dtype_name(cand.dtype),
        "reference_dtype": _dtype_name(ref.dtype),
    }
    counts = {
        "nan_count": nan_count,
        "inf_count": inf_count,
        "ref_nan_count": ref_nan,
        "ref_inf_count": ref_inf,
    }
    numel = ref.numel()

    if cand.shape != ref.shape:
        return Comparison(
            verdict="shape_mismatch",
            numel=numel,
            correct=0,
            max_abs_err=0.0,
            max_rel_err=0.0,
            mismatch_fraction=1.0,
            pattern="none",
            pattern_detail={},
            relationships=_shape_relationships(_wide(cand), _wide(ref), tol, inputs),
            **counts,
            **context,
        )

    same_dtype = cand.dtype == ref.dtype
    if not same_dtype and (ref.is_floating_point() or ref.is_complex() or not cand.is_floating_point()):
        # Compare the values as the reference dtype would hold them; a float candidate against an
        # integer reference stays float so that NaN stays visible.
        cand = cand.to(ref.dtype)
    c, r = _wide(cand), _wide(ref)
    exact_ints = same_dtype and not (ref.is_floating_point() or ref.is_complex()) and tol == _EXACT
    if slack is not None and slack.shape != r.shape:
        slack = None
    wrong = cand != ref if exact_ints else ~_close(c, r, tol, slack)

    n_wrong = _count(wrong)
    valid = torch.isfinite(r) & ~torch.isnan(c)
    err = (c - r).abs()[valid]
    max_abs = float(err.max()) if err.numel() else 0.0
    tiny = torch.finfo(ref.dtype).tiny if ref.is_floating_point() else torch.finfo(torch.float64).tiny
    max_rel = float((err / r[valid].abs().clamp_min(tiny)).max()) if err.numel() else 0.0
    pattern, detail = _pattern(wrong)
    relationships = _relationships(c, r, wrong, tol, inputs, ref.dtype) if n_wrong else []
    rel_l2 = _rel_l2(c, r) if same_dtype else -1.0

    if not same_dtype:
        verdict: Verdict = "dtype_mismatch"
    else:
        verdict = "pass" if n_wrong == 0 else "mismatch"
    return Comparison(
        verdict=verdict,
        numel=numel,
        correct=numel - n_wrong if same_dtype else 0,
        max_abs_err=max_abs,
        max_rel_err=max_rel,
        mismatch_fraction=n_wrong / numel if numel else 0.0,
        pattern=pattern,
        pattern_detail=detail,
        relationships=relationships,
        nan_where_ref_finite=_count(torch.isnan(c) & torch.isfinite(r)),
        inf_where_ref_finite=_count(torch.isinf(c) & torch.isfinite(r)),
        rel_l2=rel_l2,
        **counts,
        **context,
    )


# -------------------------------------------------------------------------------------------- describe


def _describe_pattern(c: Comparison) -> str | None:
    d = c.pattern_detail
    if c.pattern == "everywhere":
        return "errors everywhere (more than 90% of the elements are wrong)"
    if c.pattern == "tail_block":
        blocks = [d, *d.get("also", [])]
        parts = [f"along axis {x['axis']} (from index {x['start']}; block {x['block']})" for x in blocks]
        return "errors only in the last partial block " + " and ".join(parts)
    if c.pattern in ("rows", "columns"):
        listed = ", ".join(str(i) for i in d[c.pattern])
        more = ", ..." if d["count"] > len(d[c.pattern]) else ""
        return (
            f"errors confined to {d['count']} of {d['of']} whole {c.pattern} "
            f"(output flattened to 2-D over its last dimension): [{listed}{more}]"
        )
    if c.pattern == "periodic":
        where = "along the last axis" if d["index"] == "last_axis" else "in flattened order"
        return f"errors repeat with period {d['period']} {where}, at index % {d['period']} in {d['phases']}"
    if c.pattern == "leading":
        return f"errors only in the leading part of the output (flattened indices below {d['end']})"
    if c.pattern == "trailing":
        return f"errors only in the trailing part of the output (flattened indices from {d['start']})"
    if c.pattern == "scattered":
        return "errors scattered without a simple structure"
    return None


def _describe_relationship(rel: str) -> str:
    name, _, arg = rel.partition(":")
    if name == "constant_ratio":
        return f"candidate = {arg} x reference"
    if name == "constant_offset":
        sign, size = ("-", arg[1:]) if arg.startswith("-") else ("+", arg)
        return f"candidate = reference {sign} {size}"
    if name == "shifted":
        axis, k = (part.split("=")[1] for part in arg.split(","))
        return f"candidate = reference shifted by {k} along axis {axis} (off-by-{abs(int(k))} indexing?)"
    if name == "equals_input":
        return f"candidate equals input {arg} (input passed through; output never computed?)"
    return {
        "transposed": "candidate = reference transposed (last two dims swapped; wrong strides?)",
        "rows_permuted": "candidate rows are the reference rows in a different order (wrong row index?)",
        "untouched_region": "a contiguous region still holds the NaN pre-fill (never written)",
        "garbage_region": "huge or uninitialised-looking values where the reference is finite",
        "zero_region": "candidate is exactly 0 where the reference is non-zero (masked load or no store?)",
        "grows_with_magnitude": "error grows with |reference| (roughly constant relative error: precision?)",
        "same_numel_different_shape": "same number of elements as the reference, different shape",
        "reshaped": "candidate = reference reshaped (right values, wrong shape)",
    }.get(name, rel)


def describe(c: Comparison) -> list[str]:
    """Short human sentences, one per finding."""
    if c.verdict == "pass":
        return [f"output matches the reference within tolerance ({c.numel} elements)"]
    out: list[str] = []
    if c.verdict == "shape_mismatch":
        out.append(f"output shape {c.candidate_shape} differs from the reference shape {c.reference_shape}")
    elif c.verdict == "dtype_mismatch":
        values = "values match" if c.mismatch_fraction == 0 else "values still differ"
        out.append(
            f"output dtype {c.candidate_dtype} differs from the reference dtype {c.reference_dtype} "
            f"(cast to {c.reference_dtype}, {values})"
        )
    if c.verdict != "shape_mismatch" and c.mismatch_fraction > 0:
        wrong = round(c.mismatch_fraction * c.numel)
        errors = f" (max abs error {c.max_abs_err:.3g}, max rel error {c.max_rel_err:.3g})"
        out.append(f"{wrong} of {c.numel} elements outside tolerance{errors if c.max_abs_err else ''}")
    if c.nan_where_ref_finite:
        n = c.nan_where_ref_finite
        out.append(f"NaN in {n} candidate elements where the reference is finite (never written?)")
    if c.inf_where_ref_finite:
        n = c.inf_where_ref_finite
        out.append(f"Inf in {n} candidate elements where the reference is finite (overflow?)")
    pattern = _describe_pattern(c)
    if pattern is not None:
        out.append(pattern)
    out += [_describe_relationship(rel) for rel in c.relationships]
    return out
