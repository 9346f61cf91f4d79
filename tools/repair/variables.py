"""Variable substitution (part of the edit space): a name becomes another in-scope name of its kind.

Kinds come from names where the spelling says it (`stride_am`, `offs_n`, `pid_m`), from structure where it
does not (an index is computed from the lanes or the program id; a clamp and what it clamps stand in for
each other), so the tile-mapping and indexing typos LLMs make are one edit away whatever they are called.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _assignments,
    _calls,
    _constexpr_params,
    _dotted,
    _flow_names,
    _params,
    _program_id_names,
    _render,
    _replace_many,
    rule,
)
from kernel_medic.tools.repair.rules.cst_find import findall


def _name_kind(name: str, pids: set[str], masks: set[str], blocks: set[str]) -> str | None:
    low = name.lower()
    if name in pids:
        return "pid"
    if name in masks or "mask" in low:
        return "mask"
    if name in blocks or low.startswith("block") or low.endswith("_block") or "block_size" in low:
        return "block"
    if "stride" in low:
        return "stride"
    if "ptr" in low or low.endswith("_p"):
        return "pointer"
    if low.startswith(("off", "idx", "col", "row", "k_off", "rn", "rm", "rk")) and not low.startswith("n_"):
        return "index"
    if low.startswith(("n_", "num_")) or low in {"n", "m", "k", "numel", "size"} or low.endswith("_size"):
        return "size"
    if len(name) <= 2 and name.isupper():
        return "size"
    # Otherwise names of one stem are one kind (pid_m / pid_n, group_id / group_size, num_pid_m / num_pid_n):
    # the tile-mapping typos LLMs make swap such names.
    stem = low.split("_")[0]
    return f"stem:{stem}" if "_" in low and len(stem) >= 2 else None


@rule(
    "edit_variable",
    title="a name becomes another in-scope name of its kind",
    bug_class="edit:variable",
    guarded=True,
)
def edit_variable(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    # `offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)` holds lanes: an index, not a program id.
    lanes = {t for targets, value in _assignments(fn.body) if _calls(value, "tl.arange") for t in targets}
    pids = _program_id_names(fn) - lanes
    masks = _mask_names(fn)
    blocks = _constexpr_params(fn)
    # Indices by structure, not by name (`ch`, `c_idx`, `hw`): they stand in for other indices only inside
    # an address, where an element offset used for a per-channel load is the mistake.
    derived = {n for n in _lane_indices(fn, pids) if _name_kind(n, pids, masks, blocks) is None}
    addressed = {
        id(name)
        for call in _calls(fn.body, "tl.load", "tl.store")
        if call.args
        for name in findall(call.args[0].value, m.Name())
    }
    # A bound check tests an index too (`w_num < W` where the input column `iw` was meant); not the lanes'
    # own mask (`offs < n`), which an index computed from them does not replace.
    bounded = {
        id(name)
        for c in findall(fn.body, m.Comparison())
        for name in findall(c, m.Name())
        if isinstance(name, cst.Name) and name.value not in lanes
    }
    kinds = _scope_kinds(fn, pids, masks, blocks, derived)
    clamped, inside = _clamps(fn)
    for node in _read_names(fn.body):
        kind = _name_kind(node.value, pids, masks, blocks) or ("index" if node.value in derived else None)
        others = kinds.get(kind or "", []) + clamped.get(node.value, [])
        for other in dict.fromkeys(others):
            checked = id(node) in addressed or (id(node) in bounded and other not in lanes)
            if other == node.value or ({other, node.value} & derived and not checked):
                continue
            if id(node) in inside and other in clamped.get(node.value, []):
                continue  # `g = min(n - first, G)` does not become `g = min(n - first, g)`
            yield tree.edit(node, cst.Name(other), f"{fn.name.value}: {node.value} -> {other}")


@rule(
    "edit_swap_names",
    title="two names of one kind swapped within a statement",
    bug_class="edit:variable",
    guarded=True,
)
def edit_swap_names(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`alpha * bias + beta * acc` -> `beta * bias + alpha * acc`: two names of one kind (two scalar
    parameters, two strides, two sizes) that exchange roles within one statement. One substitution cannot
    fix that: it leaves one of them in both places."""
    pids = _program_id_names(fn)
    masks = _mask_names(fn)
    blocks = _constexpr_params(fn)
    pointers = {p.name.value for p in _params(fn) if "ptr" in p.name.value.lower()}
    scalars = {p.name.value for p in _params(fn)} - blocks - pointers

    def kind(name: str) -> str | None:
        return _name_kind(name, pids, masks, blocks) or ("scalar" if name in scalars else None)

    for stmt in findall(fn.body, m.SimpleStatementLine()):
        assert isinstance(stmt, cst.SimpleStatementLine)
        reads = _read_names(stmt)
        names = list(dict.fromkeys(n.value for n in reads))
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if kind(a) is None or kind(a) != kind(b) or kind(a) == "pointer":
                    continue
                swapped = {n: cst.Name(b if n.value == a else a) for n in reads if n.value in (a, b)}
                what = f"{fn.name.value}: {a} <-> {b} in {tree.code(stmt).strip().splitlines()[-1]}"
                yield Edit(_replace_many(tree.module, swapped), tree.line(stmt), what)


@rule(
    "edit_divmod_divisor",
    title="a flat index split by the wrong extent",
    bug_class="edit:variable",
    guarded=True,
)
def edit_divmod_divisor(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`kh = kk // KH; kw = kk % KH` -> `// KW`, `% KW`: a flat index is split into two coordinates by a
    floor division and a remainder with one divisor, the extent of the inner coordinate. Written with the
    other extent, both halves are wrong at once, so substituting the name in one of them gains nothing; the
    edit changes the divisor of the pair together, to each name of the divisor's kind in scope."""
    pids = _program_id_names(fn)
    masks = _mask_names(fn)
    blocks = _constexpr_params(fn)
    kinds = _scope_kinds(fn, pids, masks, blocks)
    splits: dict[tuple[str, str], dict[str, list[cst.BinaryOperation]]] = {}
    for op in findall(fn.body, m.BinaryOperation(right=m.Name())):
        assert isinstance(op, cst.BinaryOperation) and isinstance(op.right, cst.Name)
        key = (_render(op.left), op.right.value)
        if isinstance(op.operator, cst.FloorDivide):
            splits.setdefault(key, {}).setdefault("div", []).append(op)
        elif isinstance(op.operator, cst.Modulo):
            splits.setdefault(key, {}).setdefault("mod", []).append(op)
    for (index, divisor), found in splits.items():
        if not ("div" in found and "mod" in found):
            continue
        kind = _name_kind(divisor, pids, masks, blocks)
        for other in kinds.get(kind or "", []):
            if other == divisor or other == index:
                continue
            changed = {op.right: cst.Name(other) for ops in found.values() for op in ops}
            first = found["div"][0]
            what = f"{fn.name.value}: {index} // {divisor} and {index} % {divisor} -> {other}"
            yield Edit(_replace_many(tree.module, changed), tree.line(first), what)


def _mask_names(fn: cst.FunctionDef) -> set[str]:
    return {t for targets, _ in _assignments(fn.body) for t in targets if "mask" in t.lower()}


def _scope_kinds(
    fn: cst.FunctionDef,
    pids: set[str],
    masks: set[str],
    blocks: set[str],
    derived: frozenset[str] | set[str] = frozenset(),
) -> dict[str, list[str]]:
    """The function's parameters and assigned names grouped by kind (`derived` names are indices)."""
    assigned = {t for targets, _ in _assignments(fn.body) for t in targets}
    scope = [p.name.value for p in _params(fn)] + sorted(assigned)
    kinds: dict[str, list[str]] = {}
    for name in dict.fromkeys(scope):
        kind = _name_kind(name, pids, masks, blocks) or ("index" if name in derived else None)
        if kind is not None:
            kinds.setdefault(kind, []).append(name)
    return kinds


def _clamps(fn: cst.FunctionDef) -> tuple[dict[str, list[str]], set[int]]:
    """Names bound to a clamp of another (`group_size_m = min(num_pid_m - first, GROUP_SIZE_M)`), both ways,
    and the names read inside those clamps. Using the bound where its clamp was meant (a last group that is
    smaller than GROUP_SIZE_M) is a mistake of its own, whatever kinds the two names' spellings suggest."""
    pairs: dict[str, list[str]] = {}
    inside: set[int] = set()
    for targets, value in _assignments(fn.body):
        if not (isinstance(value, cst.Call) and _dotted(value.func) in _CLAMPS) or len(targets) != 1:
            continue
        (target,) = targets
        inside |= {id(n) for n in findall(value, m.Name())}
        for arg in value.args:
            if isinstance(arg.value, cst.Name) and arg.value.value != target:
                pairs.setdefault(arg.value.value, []).append(target)
                pairs.setdefault(target, []).append(arg.value.value)
    return pairs, inside


_CLAMPS = {"min", "max", "tl.minimum", "tl.maximum"}
_MODULES = {"tl", "triton", "torch", "math", "libdevice", "F", "nn", "np"}


def _lane_indices(fn: cst.FunctionDef, pids: set[str]) -> set[str]:
    """Names computed from the lanes or the program id with no load or comparison (`ch = (offs // HW) % C`):
    indices whatever they are called, so an element offset and a channel index can stand in for each other."""
    assignments = _assignments(fn.body)
    lanes = {t for targets, value in assignments if _calls(value, "tl.arange") for t in targets}
    sources = ("tl.load", "tl.zeros", "tl.full")
    data = {t for targets, value in assignments if _calls(value, *sources) for t in targets}
    flow = _flow_names(fn)
    out = set()
    for targets, value in assignments:
        if findall(value, m.Comparison()):
            continue
        out |= {t for t in targets if flow.get(t, set()) & (lanes | pids) and not flow.get(t, set()) & data}
    return out


def _read_names(root: cst.CSTNode) -> list[cst.Name]:
    """Names read as values: not assignment targets, attribute names, keywords or called functions."""

    class Reads(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: list[cst.Name] = []

        def visit_Name(self, node: cst.Name) -> None:
            self.found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Call(self, node: cst.Call) -> bool:
            # A method's receiver is read too: the load inside `tl.load(x_ptr + col).to(tl.float32)`.
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            module = isinstance(receiver, cst.Attribute) or (
                isinstance(receiver, cst.Name) and receiver.value in _MODULES
            )
            if receiver is not None and not module:
                receiver.visit(self)
            for a in node.args:
                a.visit(self)
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            return False

        def visit_AugAssign(self, node: cst.AugAssign) -> bool:
            node.value.visit(self)
            return False

        def visit_For(self, node: cst.For) -> bool:
            node.iter.visit(self)
            node.body.visit(self)
            return False

    reads = Reads()
    root.visit(reads)
    return reads.found
