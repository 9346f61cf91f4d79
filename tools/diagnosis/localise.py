"""Localisation from evidence: which statements of the candidate most likely hold the bug, most suspect first.

Two kinds of evidence, combined:

- **Agreement of intermediates** (dynamic, the interpreter only): the reference and an instrumented copy of
  the candidate run on the same small inputs (recording.py). A kernel value *agrees* when its values are
  (part of) one quantity the reference computes too (one of its decomposed intermediates, inputs and
  outputs, up to any broadcast or reshape: values are matched, not positions). The first recorded
  statement, in execution order, whose values stop agreeing is where agreement is lost; it and the
  statements it reads from (loads, offsets, masks, then the wrapper lines that hand the kernel its tensors)
  rank first, and a kernel argument it reads directly is followed through the launch to the wrapper lines
  computing it (a scale, an eps, a length).
- **Where the output is wrong** (the evaluation report): unwritten or garbage regions, a wrong tail, failures
  only at other shapes point at grids, masks, bounds and stores; failures only on a strided input at the
  wrapper's layout; everywhere-wrong values at the arithmetic; an output of the wrong shape or dtype at the
  wrapper's allocation of it and the sizes it computes.

`rank_statements` is pure (source, report, agreement) so it can be tested without a sandbox; `localise` runs
the recordings and calls it.
"""

from __future__ import annotations

import ast
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch
from kernel_medic.tools.diagnosis.recording import (
    RECORD_CANDIDATE_JOB,
    RECORD_REFERENCE_JOB,
    float_tensors,
    instrument_for_recording,
    store_argument,
)
from kernel_medic.tools.diagnosis.static_features import jit_kernels, tl_name
from kernel_medic.tools.evaluation.cases import CaseSpec, rewrite_constants
from kernel_medic.tools.evaluation.problem import Problem
from kernel_medic.tools.sandbox.pool import JobOutcome, SandboxLimits, WorkerPool

REFERENCE_JOB = "kernel_medic.tools.evaluation.jobs:reference_case"
AGREE = 0.95
"""A recorded value agrees when at least this share of its finite elements is in one reference quantity."""
_ATOL, _RTOL = 1e-4, 2e-3  # float32 kernels against float64 recordings of a decomposed reference
_COVERAGE = {"untouched_region", "garbage_region", "zero_region"}
_TAILS = {"tail_block", "trailing", "leading"}
_LAYOUT = {"transposed", "rows_permuted", "shifted", "periodic"}


@dataclass
class Agreement:
    line: int
    name: str
    share: float  # of finite elements that one reference quantity holds
    count: int
    nonfinite: frozenset[str] = frozenset()  # which of "nan", "+inf", "-inf" the recorded values hold

    @property
    def agrees(self) -> bool:
        return self.count > 0 and self.share >= AGREE


class Suspects(list[int]):
    """Statement lines, most suspect first, and for some of them why, in words a model asked about the line
    can act on (a list, so every consumer of the ranking reads it as before)."""

    def __init__(self, lines: list[int], reasons: dict[int, str] | None = None) -> None:
        super().__init__(lines)
        self.reasons = dict(reasons or {})


@dataclass
class Localisation:
    lines: list[int]  # statement lines, most suspect first
    agreement: list[Agreement] = field(default_factory=list)
    first_loss: int | None = None
    notes: list[str] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)  # line -> why the evidence points there

    @property
    def suspects(self) -> Suspects:
        return Suspects(self.lines, self.reasons)

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": "localise",
            "lines": self.lines[:12],
            "first_loss": self.first_loss,
            "agreement": [
                {"line": a.line, "name": a.name, "share": round(a.share, 3)} for a in self.agreement[:40]
            ],
            "notes": self.notes,
            "reasons": {str(line): why for line, why in self.reasons.items()},
        }


# ---------------------------------------------------------------------------------------- matching


def reference_pool(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Per reference quantity, its sorted unique finite values plus 0 and 1 (the neutral fills).

    Quantities stay apart: a correct kernel value is (part of) ONE quantity. A pooled union of every value
    would call a mixture agreeing (relu(x @ w) + b is b where x @ w < 0 and the linear output elsewhere), and
    a union of many quantities is dense enough to match almost anything within tolerance.
    """
    neutral = torch.tensor([0.0, 1.0], dtype=torch.float64)
    out: list[torch.Tensor] = []
    seen: set[tuple[int, float]] = set()
    for t in tensors:
        if not t.is_floating_point():
            continue
        flat = t.detach().reshape(-1).to(torch.float64)
        flat = flat[torch.isfinite(flat)]
        values = torch.unique(torch.cat([flat, neutral]))
        key = (values.numel(), float(values.sum()))
        if key not in seen:  # the same tensor recorded twice (an input that is also an intermediate)
            seen.add(key)
            out.append(values)
    return out or [neutral]


def _matches(v: torch.Tensor, sorted_values: torch.Tensor) -> torch.Tensor:
    """Which of `v` lie within tolerance of some value of `sorted_values`."""
    if sorted_values.numel() == 1:
        dist = (v - sorted_values[0]).abs()
    else:
        idx = torch.searchsorted(sorted_values, v).clamp(1, sorted_values.numel() - 1)
        lo, hi = sorted_values[idx - 1], sorted_values[idx]
        dist = torch.minimum((v - lo).abs(), (v - hi).abs())
    return dist <= _ATOL + _RTOL * v.abs()


_SAMPLE = 256  # values of a record scored against every quantity; the best few are then scored in full


def agreement_share(values: torch.Tensor, pool: list[torch.Tensor]) -> tuple[float, int]:
    """(largest share of the finite `values` one reference quantity explains, how many were finite)."""
    v = values.reshape(-1).to(torch.float64)
    v = v[torch.isfinite(v)]
    # The neutral fills (a masked load's lanes off, a fresh accumulator, a softmax's padded columns) are in
    # every quantity: they say nothing either way, so the share is of the other values. Counted in, a block
    # mostly of padding agreed whatever its few real lanes held (attention probabilities from a wrong scale:
    # 95% zeros at a micro size).
    v = v[(v != 0) & (v != 1)]
    if v.numel() == 0 or not pool:
        # Nothing but the neutral fills: calling it agreement hides a load that never happened.
        return 1.0, 0
    sample = v[:: max(1, v.numel() // _SAMPLE)][:_SAMPLE].contiguous()
    rough = [float(_matches(sample, q).double().mean()) for q in pool]
    best = sorted(range(len(pool)), key=lambda i: -rough[i])[:3]
    share = max(float(_matches(v, pool[i]).double().mean()) for i in best)
    return share, int(v.numel())


def nonfinite_kinds(values: torch.Tensor) -> frozenset[str]:
    """Which non-finite values (NaN, +inf, -inf) a tensor holds."""
    if not values.is_floating_point():
        return frozenset()
    kinds = {"nan": torch.isnan(values).any(), "+inf": torch.isposinf(values).any()}
    kinds["-inf"] = torch.isneginf(values).any()
    return frozenset(k for k, present in kinds.items() if bool(present))


def match_records(records: list[dict[str, Any]], pool: list[torch.Tensor]) -> list[Agreement]:
    """Agreement of every recorded (line, name), in the order the kernel first produced them."""
    out = []
    for rec in records:
        share, count = agreement_share(rec["values"], pool)
        kinds = nonfinite_kinds(rec["values"])
        if count or kinds:
            out.append(Agreement(int(rec["line"]), str(rec["name"]), share, count, kinds))
    return out


# ---------------------------------------------------------------------------------------- ranking


@dataclass
class _Stmt:
    line: int
    reads: set[str]
    writes: set[str]
    kind: str  # load | store | index | mask | compute | launch | host | control
    guard: int | None = None  # line of the innermost `if` whose branch holds it (control dependence)
    updates: set[str] = field(default_factory=set)  # `acc += x` carries acc's value on (not a slice edge)
    address: set[str] = field(default_factory=set)  # a store's: the names its pointer argument reads
    lanes: set[str] = field(default_factory=set)  # a store's: the names its mask reads


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _kind(stmt: ast.stmt, writes: set[str], roles: tuple[set[str], set[str]] = (set(), set())) -> str:
    """`roles`: names the kernel's loads and stores read as masks only, and as addresses: what a statement
    writes says its kind however the kernel names it (`m`, `ok`, `li`)."""
    calls = [tl_name(c) for c in ast.walk(stmt) if isinstance(c, ast.Call)]
    masks, addresses = roles
    if "store" in calls or "atomic_add" in calls:
        return "store"
    if "load" in calls:
        return "load"
    if isinstance(stmt, ast.For | ast.While | ast.If):
        return "control"
    if any("mask" in w.lower() for w in writes) or writes & masks:
        return "mask"
    if (
        "arange" in calls
        or "program_id" in calls
        or any(k in w.lower() for w in writes for k in ("off", "idx", "ptr", "row", "col", "pid"))
        or writes & addresses
    ):
        return "index"
    return "compute"


def _memory_roles(fn: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """(names read only by the masks of the kernel's loads and stores, names read by their pointers)."""
    masks: set[str] = set()
    addresses: set[str] = set()
    for call in ast.walk(fn):
        if not isinstance(call, ast.Call) or tl_name(call) not in ("load", "store", "atomic_add"):
            continue
        pointer = store_argument(call, 0, "pointer")
        mask = store_argument(call, 1 if tl_name(call) == "load" else 2, "mask")
        addresses |= _names_read(pointer) if pointer is not None else set()
        masks |= _names_read(mask) if mask is not None else set()
    return masks - addresses, addresses


def _statements(fn: ast.FunctionDef, host: bool) -> list[_Stmt]:
    out = []
    roles = _memory_roles(fn) if not host else (set(), set())
    guards: dict[ast.AST, int] = {}
    for node in ast.walk(fn):
        # Only branches: a loop header is reached through its loop variable where it matters, and ranking
        # every loop's header with the statements in its body pushed the K-loop bugs' own lines down.
        if isinstance(node, ast.If):
            for child in [*node.body, *node.orelse]:
                guards[child] = node.lineno
    for node in ast.walk(fn):
        if not isinstance(node, ast.stmt) or isinstance(node, ast.FunctionDef):
            continue
        if isinstance(node, ast.Assign):
            writes = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            writes = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Return) and node.value is not None and not host:
            # A jit helper's value is what its caller reads by calling it: `tl.store(..., _act(x))` depends
            # on the helper's return, where a wrong formula sits.
            writes = {fn.name}
        else:
            writes = set()
        head: ast.AST = node
        if isinstance(node, ast.For):
            head, writes = node.iter, {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.If | ast.While):
            head = node.test
        reads = _names_read(head if head is not node else node)
        if host:
            launch = any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript) for c in ast.walk(node)
            )
            kind = "launch" if launch and not isinstance(node, ast.For | ast.If | ast.While) else "host"
        else:
            kind = _kind(node, writes, roles)
        updates = writes if isinstance(node, ast.AugAssign) else set()
        stores = [c for c in ast.walk(head) if isinstance(c, ast.Call) and tl_name(c) == "store"]
        pointer = store_argument(stores[0], 0, "pointer") if stores else None
        mask = store_argument(stores[0], 2, "mask") if stores else None
        address = _names_read(pointer) if pointer is not None else set()
        lanes = _names_read(mask) if mask is not None else set()
        out.append(_Stmt(node.lineno, reads, writes, kind, guards.get(node), updates, address, lanes))
    return sorted(out, key=lambda s: s.line)


def _host_functions(tree: ast.Module, kernels: list[ast.FunctionDef]) -> list[ast.FunctionDef]:
    names = {k.name for k in kernels}
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name not in names:
            for call in ast.walk(fn):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript):
                    if isinstance(call.func.value, ast.Name) and call.func.value.id in names:
                        out.append(fn)
                        break
    return out


def _handed_over(kernel: ast.FunctionDef, params: set[str], host_fns: list[ast.FunctionDef]) -> list[_Stmt]:
    """Per launch of `kernel`: the launch line reading the names of the arguments it passes as `params`."""
    names = [a.arg for a in kernel.args.args]
    out = []
    for fn in host_fns:
        for call in ast.walk(fn):
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Subscript)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == kernel.name
            ):
                continue
            handed = [a for name, a in zip(names, call.args, strict=False) if name in params]
            handed += [k.value for k in call.keywords if k.arg in params]
            if handed:
                out.append(_Stmt(call.lineno, set().union(*map(_names_read, handed)), set(), "launch"))
    return out


def _slice(start: _Stmt, stmts: list[_Stmt], depth: int = 4) -> list[tuple[int, int]]:
    """(line, distance) of the statements `start` depends on: a breadth-first walk of the definitions it
    reads and of the `if` headers that decide whether a definition runs (a value computed on the wrong
    branch is the branch condition's doing as much as the statement's)."""
    out: list[tuple[int, int]] = []
    by_line = {s.line: s for s in stmts}
    frontier, seen = [start], {start.line}
    for level in range(1, depth + 1):
        nxt = []
        for stmt in frontier:
            defs = [s for name in sorted(stmt.reads) for s in stmts if name in s.writes]
            guard = by_line.get(stmt.guard) if stmt.guard is not None else None
            for d in [*defs, *([guard] if guard is not None else [])]:
                if d.line not in seen:
                    seen.add(d.line)
                    out.append((d.line, level))
                    nxt.append(d)
        frontier = nxt
    return out


def _downstream(start: _Stmt, stmts: list[_Stmt], depth: int = 6) -> set[int]:
    """Lines of the statements that read what `start` writes, transitively."""
    out: set[int] = set()
    frontier = [start]
    for _ in range(depth):
        nxt = []
        for stmt in frontier:
            for s in stmts:
                if s.line > start.line and s.line not in out and (s.reads | s.updates) & stmt.writes:
                    out.add(s.line)
                    nxt.append(s)
        frontier = nxt
    return out


def _report_cues(report: dict[str, Any]) -> dict[str, float]:
    """Weights per statement kind from where the output is wrong."""
    weights = {"store": 0.0, "mask": 0.0, "launch": 0.0, "host": 0.0, "index": 0.0, "compute": 0.0}
    weights.update(load=0.0, control=0.0)
    cases = [c for c in report.get("cases") or [] if c.get("counted", True)]
    failing = [c for c in cases if c.get("verdict") != "pass"]
    if not failing:
        return weights
    patterns = {c.get("pattern") for c in failing}
    rels = {r for c in failing for r in c.get("relationships") or []}
    seeds_pass = any(c.get("verdict") == "pass" for c in cases if str(c.get("name", "")).startswith("seed"))
    if rels & _COVERAGE or any(c.get("nan_count") for c in failing):
        weights.update(launch=3.0, store=2.5, mask=2.0, control=1.5, index=1.0)
    edges = any(_at_edge(c) for c in failing)
    if patterns & _TAILS or edges or (seeds_pass and any("shape[" in str(c.get("name")) for c in failing)):
        weights.update(mask=max(weights["mask"], 3.0), control=max(weights["control"], 2.5))
        weights.update(launch=max(weights["launch"], 2.0), load=max(weights["load"], 1.5))
    if rels & _LAYOUT or patterns & {"rows", "columns", "periodic"}:
        weights.update(index=max(weights["index"], 2.5), host=max(weights["host"], 2.0))
        weights.update(load=max(weights["load"], 2.0), launch=max(weights["launch"], 1.5))
    only_layout = failing and all(str(c.get("name")) == "noncontig" for c in failing)
    if only_layout:
        weights.update(host=4.0, launch=3.5, index=2.0)
    if "everywhere" in patterns or not any(weights.values()):
        weights.update(compute=max(weights["compute"], 2.0), load=max(weights["load"], 1.0))
    return weights


def _at_edge(case: dict[str, Any]) -> bool:
    """Wrong columns (or rows) that are only the first or the last of their axis: a boundary, like a tail
    (a bound off by one, a padding test), not a layout."""
    detail = case.get("pattern_detail") or {}
    lines = detail.get(str(case.get("pattern")))
    of = detail.get("of")
    if case.get("pattern") not in ("rows", "columns") or not lines or not isinstance(of, int) or of < 4:
        return False
    return all(i in (0, of - 1) for i in lines) and len(lines) == detail.get("count")


def _decomposes(kernels: list[ast.FunctionDef]) -> set[int]:
    """Lines of the kernels' assignments that split an index with `//` or `%`."""
    splits = (ast.FloorDiv, ast.Mod)
    return {
        n.lineno
        for fn in kernels
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign)
        and any(isinstance(x, ast.BinOp) and isinstance(x.op, splits) for x in ast.walk(n.value))
    }


_REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "reduce", "xor_sum", "prod"}


def _reduction(kernel: ast.FunctionDef, line: int) -> tuple[bool, set[str]]:
    """Whether the statement at `line` reduces (`tl.sum`, ...), and the names it reduces as they are."""
    calls = [
        c
        for n in ast.walk(kernel)
        if isinstance(n, ast.stmt) and n.lineno == line and not isinstance(n, ast.For | ast.While | ast.If)
        for c in ast.walk(n)
        if isinstance(c, ast.Call) and tl_name(c) in _REDUCTIONS
    ]
    return bool(calls), {c.args[0].id for c in calls if c.args and isinstance(c.args[0], ast.Name)}


def _past_the_lost_value(
    kernel: ast.FunctionDef,
    lost: _Stmt,
    kernel_stmts: list[_Stmt],
    host_fns: list[ast.FunctionDef],
    host_stmts: list[_Stmt],
    agreement: list[Agreement],
    reasons: dict[int, str],
) -> dict[int, float]:
    """Suspicion beyond the lost statement's own slice, per line: what its operands' agreement leaves to
    blame, and the wrapper lines computing the kernel arguments it reads. Why, for the lines the operands'
    agreement points at, goes into `reasons`."""
    by_line = {s.line: s for s in kernel_stmts}
    agreeing = {item.line for item in agreement if item.agrees}
    recorded = {item.line for item in agreement if item.count}
    written = {w for s in kernel_stmts for w in s.writes}
    out: dict[int, float] = {}

    def add(line: int, value: float) -> None:
        out[line] = out.get(line, 0.0) + value

    # The operands computed in the kernel (a store's value only: its address and mask are not recorded).
    value_reads = lost.reads - lost.address - lost.lanes if lost.kind == "store" else lost.reads
    operands = [s for s in kernel_stmts if s.writes & value_reads and s.line in recorded]
    exonerated = bool(operands) and all(s.line in agreeing for s in operands)
    reduces, reduced = _reduction(kernel, lost.line)
    right = ", ".join(f"`{n}`" for n in sorted(value_reads & written))
    if exonerated:
        reasons.setdefault(lost.line, f"{right} hold values the reference computes; what this makes does not")
    if exonerated and len(operands) > 1 and not reduces:
        # Operands right by value and wrong together are paired wrongly: an index only an operand's load uses
        # (a bias or statistic indexed by `offs % C` where `(offs // L) % C` was meant) is next; the store's
        # own indexing is not (it places every operand alike).
        placed = {lost.line} | {
            line
            for store in kernel_stmts
            if store.kind == "store"
            for line, _d in _slice(_Stmt(store.line, store.address, set(), "store"), kernel_stmts)
        }
        loads = [s for s in operands if s.kind == "load"]
        indexed = [
            {line: d for line, d in _slice(load, kernel_stmts, depth=2) if by_line[line].kind == "index"}
            for load in loads
        ]
        for own in indexed:
            for line, distance in own.items():
                # An index every operand's load reads (`q` and `k` both at `ptrs`) pairs them alike.
                if line not in placed and (len(loads) < 2 or not all(line in other for other in indexed)):
                    add(line, 7.0 if distance == 1 else 5.0)
                    reasons.setdefault(
                        line,
                        f"{right} each hold values the reference computes, but line {lost.line} combines "
                        "them wrongly: this index picks which elements are combined with which",
                    )
    sizes: set[str] = set()
    if exonerated and reduced:
        # A reduction of right values with a wrong result reduced the wrong lanes: too few (a block capped
        # below the row, a loop bound short), too many, or padding that is not neutral (`other=0` before a
        # max). The operand's load and the sizes its lanes are counted with are suspect, in the kernel and
        # where the wrapper computes them.
        lanes = (
            f"every value it loads is right, but line {lost.line} reduces them to a wrong result: the lanes "
            "reduced are wrong (the mask, the padding value `other`, too few or too many lanes)"
        )
        for load in [s for s in operands if s.kind == "load" and s.writes & reduced]:
            add(load.line, 3.0)
            reasons.setdefault(load.line, lanes)
            sizes |= _extent(kernel, load.line)
        for stmt in kernel_stmts:
            if stmt.writes & sizes and stmt.kind in ("mask", "index"):
                add(stmt.line, 3.0)
                reasons.setdefault(stmt.line, f"it sets which lanes line {lost.line} reduces; {lanes}")
    # A kernel argument the lost value reads directly is the wrapper's computation: follow it through the
    # launch (a scale, an eps, a length computed on the host). So is an argument an `if` header up the slice
    # reads (a flag choosing the branch that computed the value), at less weight the further up it is read.
    sliced = [(by_line[line], d) for line, d in _slice(lost, kernel_stmts) if d <= 3]
    reached = [(lost, 0)] + [(stmt, d) for stmt, d in sliced if stmt.kind == "control"]
    nearest: dict[str, int] = {}
    for stmt, distance in reached:
        for name in stmt.reads - written:
            nearest[name] = min(nearest.get(name, distance), distance)
    for name in sizes - written:
        nearest[name] = 0
    # With its operands right, what is left to blame is the operation and the arguments it reads, unrecorded
    # scalars (`scores = dot(q, k) * sm_scale` with q and k right): those weigh nearly as much as the
    # statement. Not in a reduction: its padded lanes are not in the operands' agreement.
    scalars = value_reads - written if exonerated and not reduces else set()
    host: dict[int, float] = {}
    for name, distance in nearest.items():
        weight = 1.0 / (1 + distance)
        near = 9.0 if name in scalars else 7.0 if name in sizes else 5.0
        for launch in _handed_over(kernel, {name}, host_fns):
            # Per host line the strongest reason, not the sum over arguments: every argument's slice reaches
            # the wrapper's common lines (`x = x.contiguous()`), which summed outranked the one that matters.
            host[launch.line] = max(host.get(launch.line, 0.0), 2.0 * weight)
            for line, steps in _slice(launch, host_stmts):
                host[line] = max(host.get(line, 0.0), {1: near, 2: 3.0}.get(steps, 1.5) * weight)
                if steps == 1 and name in scalars:
                    reasons.setdefault(
                        line,
                        f"it computes the kernel's `{name}`; line {lost.line} applies it to right values "
                        f"({right}) and gets wrong ones",
                    )
                elif steps == 1 and name in sizes:
                    reasons.setdefault(line, f"it computes `{name}`: how many lanes line {lost.line} reduces")
    for line, value in host.items():
        add(line, value)
    return out


def _extent(kernel: ast.FunctionDef, load_line: int) -> set[str]:
    """Names the load at `load_line` sizes its lanes with: its mask's and the kernel's `tl.arange` sizes."""
    names: set[str] = set()
    for n in ast.walk(kernel):
        if isinstance(n, ast.Call) and tl_name(n) == "load" and n.lineno == load_line:
            mask = store_argument(n, 1, "mask")
            names |= _names_read(mask) if mask is not None else set()
        elif isinstance(n, ast.Call) and tl_name(n) == "arange":
            names |= set().union(*map(_names_read, n.args)) if n.args else set()
    return names


def _wrong_output_form(report: dict[str, Any]) -> bool:
    failing = [c.get("verdict") for c in report.get("cases") or [] if c.get("counted", True)]
    return bool({report.get("verdict"), *failing} & {"shape_mismatch", "dtype_mismatch"})


def _returns(fns: list[ast.FunctionDef]) -> set[int]:
    return {n.lineno for fn in fns for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None}


def _after_launch(fns: list[ast.FunctionDef], stmts: list[_Stmt]) -> list[tuple[int, int]]:
    """(line, distance) of the host statements computing a returned value after a launch: the `return`
    (distance 0) when it computes (arithmetic or a call, not a bare name), and the computing statements
    after the launch that it reads."""
    by_line = {s.line: s for s in stmts}
    out: list[tuple[int, int]] = []
    for fn in fns:
        end = fn.end_lineno or fn.lineno
        launches = [s.line for s in stmts if s.kind == "launch" and fn.lineno <= s.line <= end]
        if not launches:
            continue
        computing = {
            n.lineno
            for n in ast.walk(fn)
            if isinstance(n, ast.Return | ast.Assign)
            and n.value is not None
            and any(isinstance(x, ast.BinOp | ast.Call) for x in ast.walk(n.value))
        }
        for ret in (n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None):
            if ret.lineno < min(launches) or ret.lineno not in by_line:
                continue
            if ret.lineno in computing:
                out.append((ret.lineno, 0))
            out += [
                (line, d)
                for line, d in _slice(by_line[ret.lineno], stmts, depth=2)
                if line > min(launches) and line in computing and by_line[line].kind == "host"
            ]
    return out


def _arithmetic(fns: list[ast.FunctionDef]) -> set[int]:
    """Lines of the assignments that compute with arithmetic (`(H - K) // S + 1`)."""
    return {
        n.lineno
        for fn in fns
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and any(isinstance(x, ast.BinOp) for x in ast.walk(n.value))
    }


def _introduces_nonfinite(agreement: list[Agreement], by_line: dict[int, _Stmt]) -> int | None:
    """The first computed value holding a NaN or an infinity that none of the values it reads held (log(0),
    exp overflow, 0 * inf): where a non-finite output comes from. Fills are left out (`other=-inf` on a
    load, a running maximum started at -inf): a statement must compute from recorded values."""
    held: dict[str, set[str]] = {}
    for item in agreement:
        stmt = by_line.get(item.line)
        inputs = [held[name] for name in stmt.reads if name in held] if stmt is not None else []
        if stmt is not None and stmt.kind == "compute" and item.nonfinite and inputs:
            if item.nonfinite - set().union(*inputs):
                return item.line
        held.setdefault(item.name, set()).update(item.nonfinite)
    return None


def rank_statements(
    source: str,
    report: dict[str, Any] | None = None,
    agreement: list[Agreement] | None = None,
    nonfinite_output: bool = False,
    collisions: dict[int, float] | None = None,
) -> Localisation:
    """Statement lines of kernels and their wrappers, most suspect first, from the report and agreement.

    `nonfinite_output`: the kernel's output held NaN or infinities where the reference's was finite; the
    statement that first made such values from finite ones is then where agreement is lost.
    `collisions`: per store line, the share of its stored elements another program had stored already.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return Localisation([], notes=["unparsable source"])
    kernels = jit_kernels(tree)
    kernel_stmts = [s for fn in kernels for s in _statements(fn, host=False)]
    host_fns = _host_functions(tree, kernels)
    host_stmts = [s for fn in host_fns for s in _statements(fn, host=True)]
    score: dict[int, float] = {}
    reasons: dict[int, str] = {}

    def bump(line: int, value: float) -> None:
        score[line] = score.get(line, 0.0) + value

    cues = _report_cues(report or {})
    for stmt in [*kernel_stmts, *host_stmts]:
        bump(stmt.line, cues.get(stmt.kind, 0.0))
    if _wrong_output_form(report or {}):
        # An output of the wrong shape or dtype is the wrapper's allocation, whatever the kernel computes: the
        # statement making the returned tensor, then those computing its sizes (arithmetic first: an output
        # size formula is where the mistakes are, a shape unpacked from an input rarely).
        returns, arithmetic = _returns(host_fns), _arithmetic(host_fns)
        for ret in [s for s in host_stmts if s.kind == "host" and s.line in returns]:
            for line, distance in _slice(ret, host_stmts, depth=3):
                bump(line, {1: 14.0, 2: 8.0}.get(distance, 5.0) + (2.0 if line in arithmetic else 0.0))
    first_loss = None
    notes: list[str] = []
    by_line = {s.line: s for s in kernel_stmts}
    decomposes = _decomposes(kernels) if collisions else set()
    for line, share in sorted((collisions or {}).items()):
        if share <= 0 or line not in by_line:
            continue
        # Two programs storing to one element: the programs' mapping onto the output is not one-to-one, so
        # some elements are never written. The store's address and mask and what they are computed from
        # are suspect. Many elements stored twice is the mapping (a missing batch or row term, the program
        # id's decomposition: `pid // n`, `pid % n`); a few is a block's edge lanes reaching into the next
        # block's elements (a mask off by one).
        notes.append(f"line {line} stores {share:.0%} of its elements where another program stored already")
        store, edge = by_line[line], share < 0.1
        bump(line, 6.0)
        reasons.setdefault(line, f"{share:.0%} of the elements it stores another program stored already")
        names = store.lanes if edge else store.address | store.lanes
        for stmt_line, distance in _slice(_Stmt(line, names, set(), "store"), kernel_stmts):
            bump(stmt_line, {1: 4.0, 2: 3.0}.get(distance, 2.0))
            if edge or stmt_line in decomposes:
                bump(stmt_line, 2.0)
    agreeing = {item.line for item in agreement or [] if item.agrees}
    introduced = _introduces_nonfinite(agreement or [], by_line) if nonfinite_output else None
    for item in agreement or []:
        if item.line == introduced:
            first_loss = item.line
            notes.append(f"line {first_loss} first makes the non-finite values the output holds")
            break
        if item.count and not item.agrees and item.line in by_line:
            if _downstream(by_line[item.line], kernel_stmts) & agreeing:
                continue  # composed differently (x_max + log(sum) before x - lse): agreement comes back
            first_loss = item.line
            break
    if first_loss is not None:
        notes.append(f"agreement with the reference is first lost at line {first_loss}")
        bump(first_loss, 10.0)
        for line, distance in _slice(by_line[first_loss], kernel_stmts):
            bump(line, {1: 6.0, 2: 4.0}.get(distance, 2.5))
        lost = by_line[first_loss]
        for kernel in kernels:
            if kernel.lineno <= first_loss <= (kernel.end_lineno or kernel.lineno):
                past = _past_the_lost_value(
                    kernel, lost, kernel_stmts, host_fns, host_stmts, agreement or [], reasons
                )
                for line, value in past.items():
                    bump(line, value)
        reasons.setdefault(first_loss, "the first statement whose values match nothing the reference has")
        # The statements whose values still agree are less likely to hold the bug. A later statement that
        # changes how much of a disagreeing value agrees may hold a second bug (most real near-misses have
        # two; values merely computed from the lost one keep its share): it and what it reads come next.
        last_share = next((i.share for i in agreement or [] if i.line == first_loss), None)
        for item in agreement or []:
            if item.agrees and item.line != first_loss:
                bump(item.line, -1.0)
            elif item.count and item.line > first_loss and item.line in by_line and last_share is not None:
                if abs(item.share - last_share) > 0.05:
                    bump(item.line, 3.0)
                    for line, distance in _slice(by_line[item.line], kernel_stmts):
                        if distance == 1 and line > first_loss:
                            bump(line, 1.5)
                last_share = item.share
        # A kernel that reads the wrong elements of a right tensor: the wrapper handed them over.
        for stmt in host_stmts:
            bump(stmt.line, 1.5 if stmt.kind == "launch" else 0.5)
    elif agreement:
        # Right values in the wrong places (or in too few): the addresses, masks and the grid are suspect.
        notes.append("every recorded kernel value agrees with a reference quantity")
        for stmt in kernel_stmts:
            bump(stmt.line, {"store": 2.0, "load": 1.5, "mask": 1.0, "index": 1.0}.get(stmt.kind, 0.0))
        for stmt in host_stmts:
            bump(stmt.line, 2.0 if stmt.kind == "launch" else 1.0)
        # Or the values are right and the host's work on them after the launch is not (a mean over the wrong
        # count, a step left out): the returned value's computation from the kernel's output is next.
        for line, distance in _after_launch(host_fns, host_stmts):
            bump(line, 3.0 if distance == 0 else 2.0)
    order = sorted(score, key=lambda line: (-score[line], line))
    return Localisation(order, list(agreement or []), first_loss, notes, reasons)


# ---------------------------------------------------------------------------------------- running


def _result(outcome: JobOutcome, who: str) -> dict[str, Any] | str:
    if outcome.status != "ok" or not isinstance(outcome.result, dict):
        return f"{who} did not run: {outcome.error or outcome.status}"
    if outcome.result.get("error"):
        err = outcome.result["error"]
        return f"{who} failed: {err.get('message', err) if isinstance(err, dict) else err}"
    return outcome.result


def localise(
    problem: Problem,
    pool: WorkerPool,
    source: str,
    report: dict[str, Any] | None = None,
    device: str = "cpu",
    case: CaseSpec | None = None,
    limits: SandboxLimits | None = None,
) -> Localisation:
    """Rank the candidate `source`'s statements: report cues always, agreement when both recordings run.

    `case` (default: the problem's first seed) gives the inputs; a micro case keeps the recording small.
    """
    limits = limits or SandboxLimits(timeout_s=problem.config.timeout_s)
    if device != "cpu":  # values are observable per program only under the interpreter
        return rank_statements(source, report)
    case = case or CaseSpec(name="seed0", seed=problem.config.effective().seeds[0])
    try:
        instrumented = instrument_for_recording(source)
    except (SyntaxError, ValueError) as exc:
        loc = rank_statements(source, report)
        loc.notes.append(f"no recording: {exc}")
        return loc
    reference_source = rewrite_constants(problem.reference_source, dict(case.size_overrides))
    base_payload = {
        "source": reference_source,
        "filename": problem.reference_path.name,
        "case": case.to_dict(),
    }
    base = _result(
        pool.submit(REFERENCE_JOB, {**base_payload, "device": device}, limits).result(), "reference"
    )
    if isinstance(base, str):
        loc = rank_statements(source, report)
        loc.notes.append(base)
        return loc
    common = {
        "seed": case.seed,
        "init_inputs": base["init_inputs"],
        "inputs": base["inputs"],
        "state_dict": base["state_dict"],
        "device": device,
    }
    futures: dict[str, Future[JobOutcome]] = {
        "reference": pool.submit(
            RECORD_REFERENCE_JOB,
            {**common, "source": reference_source, "filename": problem.reference_path.name},
            limits,
        ),
        "candidate": pool.submit(
            RECORD_CANDIDATE_JOB,
            {**common, "source": instrumented, "filename": problem.candidate_path.name, "model": "ModelNew"},
            limits,
        ),
    }
    ref = _result(futures["reference"].result(), "reference recording")
    cand = _result(futures["candidate"].result(), "candidate recording")
    if isinstance(ref, str) or isinstance(cand, str):
        loc = rank_statements(source, report)
        loc.notes += [r for r in (ref, cand) if isinstance(r, str)]
        return loc
    inputs = [x for x in base["inputs"] if isinstance(x, torch.Tensor)]
    quantities = [*ref["intermediates"], *inputs, *base["outputs"]]
    quantities += [t for t in base["state_dict"].values() if isinstance(t, torch.Tensor)]
    agreement = match_records(cand["records"], reference_pool(quantities))
    made = set().union(*(nonfinite_kinds(t) for t in float_tensors(cand["outputs"])))
    expected = set().union(*(nonfinite_kinds(t) for t in float_tensors(base["outputs"])))
    collisions = {
        int(w["line"]): w["collisions"] / w["stored"] for w in cand.get("writes") or [] if w.get("stored")
    }
    return rank_statements(source, report, agreement, bool(made - expected), collisions)
