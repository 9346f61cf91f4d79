"""Index and mask rules: how a kernel maps program ids and offsets onto memory, from the bug taxonomy.

Each rule reads the kernel's own names (its parameters, program ids, aranges) and proposes a few small edits;
the search screens them, so a rule may offer every plausible name where the right one cannot be told apart.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _arg,
    _assignments,
    _calls,
    _constexpr_params,
    _dotted,
    _expr,
    _flow_names,
    _mask_expressions,
    _names,
    _params,
    _program_id_names,
    _render,
    _replace_many,
    _scalar_params,
    _values_of,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.rules.normalisation import (
    _role,
)


def _int_params(fn: cst.FunctionDef) -> list[str]:
    """Runtime integer-like parameters: not pointers, not strides, not constexpr block sizes."""
    constexpr = _constexpr_params(fn)
    out = []
    for p in _params(fn):
        low = p.name.value.lower()
        if p.name.value in constexpr or "ptr" in low or "stride" in low or low in ("eps", "scale", "alpha"):
            continue
        out.append(p.name.value)
    return out


def _pointer_params(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in _params(fn) if "ptr" in p.name.value.lower()]


def _local_aranges(fn: cst.FunctionDef) -> set[str]:
    """Names assigned a bare `tl.arange(...)`: offsets within the block, not global ones."""
    out: set[str] = set()
    for targets, value in _assignments(fn.body):
        if isinstance(value, cst.Call) and _dotted(value.func) == "tl.arange":
            out |= targets
    return out


# ---------------------------------------------------------------- flat index of a broadcast operand


@rule(
    "flat_channel_index",
    title="a flat kernel's channel index is (offs // L) % C, not offs % C or offs // L",
    bug_class="strides_layout",
    symptoms=("everywhere", "periodic", "scattered", "shape"),
)
def flat_channel_index(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`offs % C` reads a per-channel operand as if channels were the last axis, `offs // L` counts planes
    of every sample: both are `(offs // L) % C`."""
    ints = _int_params(fn)
    # Only a modulo that indexes a small operand directly (`b = tl.load(bias_ptr + c)`): a broadcast.
    indices = {
        n.value
        for call in _calls(fn.body, "tl.load")
        if call.args
        and isinstance(ptr := call.args[0].value, cst.BinaryOperation)
        and isinstance(ptr.operator, cst.Add)
        for n in (ptr.left, ptr.right)
        if isinstance(n, cst.Name) and "ptr" not in n.value.lower()
    }
    for targets, op in _assignments(fn.body):
        if not (isinstance(op, cst.BinaryOperation) and isinstance(op.operator, cst.Modulo)):
            continue
        if not (isinstance(op.left, cst.Name) and isinstance(op.right, cst.Name)):
            continue
        if op.right.value not in ints or not targets & indices:
            continue
        for inner in ints:
            # The total element count is never the inner extent of a broadcast axis.
            if inner == op.right.value or any(k in inner.lower() for k in ("elem", "numel", "total")):
                continue
            new = _expr(f"({op.left.value} // {inner}) % {op.right.value}")
            what = f"{fn.name.value}: channel index ({op.left.value} // {inner}) % {op.right.value}"
            yield tree.edit(op, new, what)
    # The other half of the same slip: `offs // L` is the index of the (batch, channel) plane, which only
    # names a channel once it wraps at C.
    flow = _flow_names(fn)
    lanes = {t for targets, value in _assignments(fn.body) if _calls(value, "tl.arange") for t in targets}
    wrapped = {
        _render(op.left)
        for op in findall(fn.body, m.BinaryOperation(operator=m.Modulo()))
        if isinstance(op, cst.BinaryOperation)
    }
    # Extents: a size the kernel bounds something by, or one it is handed and never reads (strides are read
    # only in products).
    compared = {n for c in findall(fn.body, m.Comparison()) for n in _names(c)}
    extents = [n for n in ints if n in compared or n not in _names(fn.body)]
    for _, op in _assignments(fn.body):
        if not (isinstance(op, cst.BinaryOperation) and isinstance(op.operator, cst.FloorDivide)):
            continue
        if not (isinstance(op.left, cst.Name) and isinstance(op.right, cst.Name) and op.right.value in ints):
            continue
        if not flow.get(op.left.value, {op.left.value}) & lanes or op.left.value in wrapped:
            continue  # a program id's split, or a (row, column) pair already taken apart with `%`
        for outer in extents:
            if outer == op.right.value or any(k in outer.lower() for k in ("elem", "numel", "total")):
                continue
            new = _expr(f"({op.left.value} // {op.right.value}) % {outer}")
            what = f"{fn.name.value}: channel index ({op.left.value} // {op.right.value}) % {outer}"
            yield tree.edit(op, new, what)


# ---------------------------------------------------------------- 2-D tile masks


def _broadcast_axis(sub: cst.BaseExpression) -> tuple[str, int] | None:
    """(`a`, axis) for `a[:, None]` (axis 0) or `a[None, :]` (axis 1)."""
    if not (isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name) and len(sub.slice) == 2):
        return None
    parts = [_render(s.slice).strip() for s in sub.slice]
    if parts == [":", "None"]:
        return sub.value.value, 0
    if parts == ["None", ":"]:
        return sub.value.value, 1
    return None


@rule(
    "mask_missing_axis",
    title="a 2-D tile mask bounds both axes",
    bug_class="tail_mask",
    symptoms=("out_of_bounds_write", "tail_block", "garbage_region", "shape", "columns", "rows"),
)
def mask_missing_axis(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A 2-D tile mask bounds one axis only: the other axis spills into the next row (or past the end)."""
    # Offsets are built from tl.arange; masks and loaded values broadcast the same way are not offsets.
    offsets = {t for targets, v in _assignments(fn.body) if _calls(v, "tl.arange") for t in targets}
    axes: dict[int, list[str]] = {0: [], 1: []}
    for sub in findall(fn.body, m.Subscript()):
        found = _broadcast_axis(sub)  # type: ignore[arg-type]
        if found and found[0] in offsets and found[0] not in axes[found[1]]:
            axes[found[1]].append(found[0])
    ints = _int_params(fn)
    for mask in _mask_expressions(fn):
        bounded = {
            found
            for cmp in findall(mask, m.Comparison())
            if isinstance(cmp, cst.Comparison) and (found := _broadcast_axis(cmp.left)) is not None
        }
        if len({axis for _, axis in bounded}) != 1:
            continue
        (name, axis), *_ = sorted(bounded)
        bound_names = _names(mask)
        other = 1 - axis
        for offs in axes[other]:
            for n in ints:
                if n in bound_names:
                    continue
                index = f"{offs}[None, :]" if other == 1 else f"{offs}[:, None]"
                new = _expr(f"({_render(mask)}) & ({index} < {n})")
                what = f"{fn.name.value}: mask also bounds {index} < {n}"
                yield tree.edit(mask, new, what)


_NOT_SIZES = ("BLOCK", "PAD", "STRIDE", "DIL")


@rule(
    "upper_bound",
    title="a padding mask bounds an index on both sides",
    bug_class="tail_mask",
    symptoms=("trailing", "garbage_region", "shape", "columns", "tail_block"),
)
def upper_bound(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A padding mask checks `i >= 0` but not `i < size`: the far edge reads the next row instead of zero."""
    sizes = [c for c in sorted(_constexpr_params(fn)) if not any(k in c.upper() for k in _NOT_SIZES)]
    candidates = _int_params(fn) + sizes
    for mask in _mask_expressions(fn):
        text = _render(mask).replace(" ", "")
        for cmp in findall(mask, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            if len(cmp.comparisons) != 1 or not isinstance(cmp.comparisons[0].operator, cst.GreaterThanEqual):
                continue
            if _render(cmp.comparisons[0].comparator).strip() != "0":
                continue
            var = _render(cmp.left).strip()
            if f"{var}<".replace(" ", "") in text:
                continue
            bare = _render(cmp.with_changes(lpar=[], rpar=[])).strip()
            for n in candidates:
                new = _expr(f"({bare}) & ({var} < {n})").with_changes(lpar=cmp.lpar, rpar=cmp.rpar)
                what = f"{fn.name.value}: bound {var} < {n} as well as {var} >= 0"
                yield tree.edit(cmp, new, what)


def _bound_of(fn: cst.FunctionDef, offs: str) -> str | None:
    """The size an offsets vector is compared with anywhere in the kernel (`offs_n[None, :] < N`)."""
    for cmp in findall(fn.body, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        left = cmp.left
        name = left.value if isinstance(left, cst.Name) else (_broadcast_axis(left) or ("", 0))[0]
        if (
            name == offs
            and len(cmp.comparisons) == 1
            and isinstance(cmp.comparisons[0].operator, cst.LessThan)
        ):
            return _render(cmp.comparisons[0].comparator).strip()
    return None


@rule(
    "bias_axis_swap",
    title="a bias vector is indexed and broadcast along the output axis it belongs to",
    bug_class="strides_layout",
    symptoms=("rows", "columns", "everywhere", "constant_offset", "shape"),
)
def bias_axis_swap(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A bias loaded with one axis' offsets and broadcast along it: load and broadcast the other axis."""
    seen: dict[str, set[int]] = {}
    for sub in findall(fn.body, m.Subscript()):
        found = _broadcast_axis(sub)  # type: ignore[arg-type]
        if found:
            seen.setdefault(found[0], set()).add(found[1])
    # Offsets of one output axis only (a K offset broadcast both ways belongs to neither).
    axes = {name: next(iter(a)) for name, a in seen.items() if len(a) == 1}
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        load = node.value
        if not (isinstance(load, cst.Call) and _dotted(load.func) == "tl.load" and load.args):
            continue
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            continue
        vector = node.targets[0].target.value
        ptr = load.args[0].value
        if not (isinstance(ptr, cst.BinaryOperation) and isinstance(ptr.operator, cst.Add)):
            continue
        if not (isinstance(ptr.right, cst.Name) and ptr.right.value in axes):
            continue
        offs = ptr.right.value
        others = [o for o, axis in axes.items() if axis != axes[offs] and _bound_of(fn, o) is not None]
        uses = [
            sub
            for sub in findall(fn.body, m.Subscript(value=m.Name(vector)))
            if isinstance(sub, cst.Subscript) and _broadcast_axis(sub) is not None
        ]
        if not uses:
            continue
        for other in others:
            old_bound, new_bound = _bound_of(fn, offs), _bound_of(fn, other)
            mapping: dict[cst.CSTNode, cst.CSTNode] = {
                n: cst.Name(other) for n in findall(load, m.Name(offs)) if isinstance(n, cst.Name)
            }
            if old_bound and new_bound and old_bound.isidentifier() and new_bound.isidentifier():
                mapping.update({n: cst.Name(new_bound) for n in findall(load, m.Name(old_bound))})
            index = "[None, :]" if axes[other] == 1 else "[:, None]"
            mapping.update({sub: _expr(f"{vector}{index}") for sub in uses})
            new = _replace_many(tree.module, mapping)
            what = f"{fn.name.value}: {vector} indexed by {other} and broadcast {index}"
            yield Edit(new, tree.line(node), what)


_CHANNEL_NORMS = ("GroupNorm", "group_norm", "InstanceNorm", "instance_norm", "BatchNorm", "batch_norm")


@rule(
    "affine_channel",
    title="a channel-wise norm applies its affine weight and bias per channel",
    bug_class="normalisation",
    symptoms=("everywhere", "rows", "columns", "constant_offset", "periodic"),
)
def affine_channel(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A channel-wise norm (group/instance/batch) skips its per-channel affine: apply it by channel index."""
    if context is None or not any(k in context.reference_source for k in _CHANNEL_NORMS):
        return
    used = _names(fn.body)
    unused = {_role(p.name.value): p.name.value for p in _params(fn) if p.name.value not in used}
    unused.pop(None, None)
    if not unused:
        return
    ints = _int_params(fn)
    pids = sorted(_program_id_names(fn))
    # Group/channel ids: `pid % G`, `pid // G` (an address such as `pid * size` is no channel).
    derived = [
        n
        for targets, v in _assignments(fn.body)
        if isinstance(v, cst.BinaryOperation)
        and isinstance(v.operator, cst.Modulo | cst.FloorDivide)
        and _names(v.left) & set(pids)
        for n in sorted(targets)
    ]
    local = sorted(_local_aranges(fn))
    # Channel of an element: group * channels_per_group + offset // spatial, or program % channels.
    indices = [
        f"{g} * {p} + {o} // {q}" for g in derived for p in ints for q in ints if p != q for o in local
    ]
    indices += [f"{pid} % {p}" for pid in pids for p in ints]
    for store in _calls(fn.body, "tl.store"):
        value, mask = _arg(store, "value", 1), _arg(store, "mask", 2)
        if value is None:
            continue
        masked = f", mask={_render(mask.value)}" if mask is not None else ""
        for index in indices:
            code = _render(value.value)
            if "weight" in unused:
                code = code if isinstance(value.value, cst.Name) else f"({code})"
                code = f"{code} * tl.load({unused['weight']} + {index}{masked}, other=1.0)"
            if "bias" in unused:
                code = f"{code} + tl.load({unused['bias']} + {index}{masked}, other=0.0)"
            what = f"{fn.name.value}: apply the per-channel {' and '.join(sorted(unused))} at {index}"
            yield Edit(tree.replace(value.value, _expr(code)), tree.line(store), what)


# ---------------------------------------------------------------- filters, tile bounds and channel offsets

_WEIGHT_WORDS = ("w", "weight", "filter", "kernel", "filt")


def _is_weight_pointer(name: str) -> bool:
    # `W` alone is a width, not a filter: a pointer is lower case or says `ptr`.
    if "ptr" not in name.lower() and not name.islower():
        return False
    stem = name.lower().removesuffix("ptr").strip("_")
    return stem in _WEIGHT_WORDS or stem.startswith(("weight", "filter"))


@rule(
    "unflip_taps",
    title="a convolution reads its filter unflipped (cross-correlation)",
    bug_class="operator_misread",
    symptoms=("everywhere", "scattered", "shape"),
)
def unflip_taps(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A filter read as `w[K - 1 - k]` is a true convolution; PyTorch's conv is cross-correlation: `w[k]`."""
    for call in _calls(fn.body, "tl.load"):
        if not call.args or not any(_is_weight_pointer(n) for n in _names(call.args[0].value)):
            continue
        mapping: dict[cst.CSTNode, cst.CSTNode] = {}
        for op in findall(call.args[0].value, m.BinaryOperation(operator=m.Subtract())):
            assert isinstance(op, cst.BinaryOperation)
            inner = op.left
            flipped = (
                isinstance(inner, cst.BinaryOperation)
                and isinstance(inner.operator, cst.Subtract)
                and _render(inner.right).strip() == "1"
                and isinstance(op.right, cst.Name)
            )
            if flipped:
                mapping[op] = cst.Name(op.right.value)  # type: ignore[union-attr]
        if mapping:
            new = _replace_many(tree.module, mapping)
            what = f"{fn.name.value}: read the filter unflipped (cross-correlation, as PyTorch's conv)"
            yield Edit(new, tree.line(call), what)


@rule(
    "mask_axis_bound",
    title="each axis of a 2-D mask bounded by its own size",
    bug_class="tail_mask",
    symptoms=("untouched_region", "zero_region", "garbage_region", "shape", "rows", "columns"),
)
def mask_axis_bound(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Both axes of a 2-D mask bounded by the same size: one of them is the other axis' size. So are two
    coordinates of one window (`(ih < W) & (iw < W)`): the row's bound is the height."""
    ints = _int_params(fn)
    yield from _shared_bounds(tree, fn, _scalar_params(fn)[0])
    for mask in _mask_expressions(fn):
        by_axis: dict[int, list[cst.Comparison]] = {0: [], 1: []}
        for cmp in findall(mask, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            found = _broadcast_axis(cmp.left)
            if found and len(cmp.comparisons) == 1 and isinstance(cmp.comparisons[0].comparator, cst.Name):
                by_axis[found[1]].append(cmp)
        if not (by_axis[0] and by_axis[1]):
            continue
        bounds = {c.comparisons[0].comparator.value for axis in (0, 1) for c in by_axis[axis]}  # type: ignore[attr-defined]
        if len(bounds) != 1:
            continue
        (same,) = bounds
        for cmp in (*by_axis[0], *by_axis[1]):
            bound = cmp.comparisons[0].comparator
            for n in ints:
                if n == same:
                    continue
                new = tree.replace(bound, cst.Name(n))
                what = f"{fn.name.value}: {_render(cmp.left).strip()} bounded by {n}, not {same}"
                yield Edit(new, tree.line(cmp), what)


def _shared_bounds(tree: Tree, fn: cst.FunctionDef, ints: list[str]) -> Iterator[Edit]:
    """Upper bounds `a < X` of two different coordinates by the same size X, in a mask or in a value a mask
    reads (`m = (ih >= 0) & (ih < W) & (iw < W)`, used as `mask=cm[:, None] & m[None, :]`): each bound
    may be another integer argument."""
    values = _values_of(fn)
    done: set[int] = set()
    for mask in _mask_expressions(fn):
        # The mask with the values it reads, to any depth: `valid = row_ok & (iw < H)`, `row_ok = (ih < H)`.
        parts, todo = [mask], [mask]
        while todo:
            for n in sorted(_names(todo.pop())):
                v = values.get(n, [])
                if len(v) == 1 and all(v[0] is not p for p in parts):
                    parts.append(v[0])
                    todo.append(v[0])
        by_bound: dict[str, list[cst.Comparison]] = {}
        for cmp in (c for part in parts for c in findall(part, m.Comparison())):
            assert isinstance(cmp, cst.Comparison)
            if len(cmp.comparisons) != 1 or id(cmp) in done:
                continue
            target = cmp.comparisons[0]
            if isinstance(target.operator, cst.LessThan | cst.LessThanEqual) and isinstance(
                target.comparator, cst.Name
            ):
                by_bound.setdefault(target.comparator.value, []).append(cmp)
        for same, cmps in by_bound.items():
            if len({_render(c.left).strip() for c in cmps}) < 2 or any(_broadcast_axis(c.left) for c in cmps):
                continue  # one coordinate, or a 2-D tile's axes (the rule's other half)
            for cmp in cmps:
                done.add(id(cmp))
                for n in ints:
                    if n != same:
                        new = tree.replace(cmp.comparisons[0].comparator, cst.Name(n))
                        what = f"{fn.name.value}: {_render(cmp.left).strip()} bounded by {n}, not {same}"
                        yield Edit(new, tree.line(cmp), what)


@rule(
    "channel_group_offset",
    title="GroupNorm's per-channel affine indexed by the channel in the whole tensor",
    bug_class="normalisation",
    symptoms=("everywhere", "rows", "periodic", "constant_offset"),
)
def channel_group_offset(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """GroupNorm's affine is per channel of the tensor: a channel within the group needs `g * C_per_g +`."""
    if context is None or not any(k in context.reference_source for k in ("GroupNorm", "group_norm")):
        return
    pids = set(_program_id_names(fn))
    groups = [
        n
        for targets, v in _assignments(fn.body)
        if isinstance(v, cst.BinaryOperation)
        and isinstance(v.operator, cst.Modulo | cst.FloorDivide)
        and _names(v.left) & pids
        for n in sorted(targets)
    ]
    # Names the weight or bias pointer is indexed with.
    affine_index = {
        n
        for call in _calls(fn.body, "tl.load")
        if call.args and any(_role(p) for p in _names(call.args[0].value))
        for n in _names(call.args[0].value)
    }
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            continue
        name = node.targets[0].target.value
        if name not in affine_index or _names(node.value) & set(groups) or _names(node.value) & pids:
            continue
        for g in groups:
            for p in _int_params(fn):
                new = _expr(f"{g} * {p} + {_render(node.value)}")
                what = f"{fn.name.value}: channel {name} offset by group {g} * {p}"
                yield Edit(tree.replace(node.value, new), tree.line(node), what)


# ---------------------------------------------------------------- row addressing and program ids


@rule(
    "row_times_block",
    title="rows addressed by their runtime length, not the block size",
    bug_class="strides_layout",
    symptoms=("shape", "rows", "out_of_bounds_write", "garbage_region", "shifted"),
)
def row_times_block(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`row * BLOCK` addresses rows of a row-wise kernel whose row length is a runtime size, not the block."""
    rows = _program_id_names(fn)
    constexpr = _constexpr_params(fn)
    local = _local_aranges(fn)
    # Row lengths: sizes a block-local arange is compared with (`cols < n_cols`).
    lengths = [
        _render(cmp.comparisons[0].comparator).strip()
        for mask in _mask_expressions(fn)
        for cmp in findall(mask, m.Comparison())
        if isinstance(cmp, cst.Comparison)
        and len(cmp.comparisons) == 1
        and isinstance(cmp.left, cst.Name)
        and cmp.left.value in local
        and isinstance(cmp.comparisons[0].comparator, cst.Name)
    ]
    for op in findall(fn.body, m.BinaryOperation(operator=m.Multiply())):
        assert isinstance(op, cst.BinaryOperation)
        for row, block in ((op.left, op.right), (op.right, op.left)):
            if not (isinstance(row, cst.Name) and isinstance(block, cst.Name)):
                continue
            if row.value not in rows or block.value not in constexpr:
                continue
            for n in dict.fromkeys(lengths):
                new = tree.replace(block, block.with_changes(value=n))
                what = f"{fn.name.value}: rows are {n} long, not {block.value}"
                yield Edit(new, tree.line(op), what)


@rule(
    "pid_decomposition",
    title="a flat program id decomposed by the right grid size",
    bug_class="grid_coverage",
    symptoms=("shape", "untouched_region", "zero_region", "garbage_region", "tail_block"),
)
def pid_decomposition(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`pid // A`, `pid % A` decompose a flat program id by the wrong grid size: use the other one."""
    pids = _program_id_names(fn)
    values = _values_of(fn)
    sizes = [
        n
        for n, vs in values.items()
        if any(_calls(v, "tl.cdiv") for v in vs) or n.lower().startswith(("num_pid", "grid_", "n_blocks"))
    ]
    ops: dict[tuple[str, str], list[cst.BinaryOperation]] = {}
    for op in findall(fn.body, m.BinaryOperation(operator=m.FloorDivide() | m.Modulo())):
        assert isinstance(op, cst.BinaryOperation)
        if isinstance(op.left, cst.Name) and op.left.value in pids and isinstance(op.right, cst.Name):
            ops.setdefault((op.left.value, op.right.value), []).append(op)
    for (pid, size), found in ops.items():
        kinds = {type(op.operator) for op in found}
        if kinds != {cst.FloorDivide, cst.Modulo}:
            continue
        # Grid sizes first, then the kernel's runtime sizes (a (n, c) split by C rather than N).
        for other in dict.fromkeys([*sizes, size, *_int_params(fn)]):
            if other != size:
                mapping: dict[cst.CSTNode, cst.CSTNode] = {
                    op.right: cst.Name(other) for op in found if isinstance(op.right, cst.Name)
                }
                what = f"{fn.name.value}: decompose {pid} by {other}, not {size}"
                yield Edit(_replace_many(tree.module, mapping), tree.line(found[0]), what)
            # The quotient and the remainder may be the other way round: swap `//` and `%`.
            swapped: dict[cst.CSTNode, cst.CSTNode] = {
                op: op.with_changes(
                    operator=cst.Modulo() if isinstance(op.operator, cst.FloorDivide) else cst.FloorDivide(),
                    right=cst.Name(other),
                )
                for op in found
            }
            what = f"{fn.name.value}: swap the quotient and remainder of {pid} by {other}"
            yield Edit(_replace_many(tree.module, swapped), tree.line(found[0]), what)


def _stride_tokens(name: str) -> list[str]:
    return [t for t in name.lower().split("_") if t]


@rule(
    "stride_owner",
    title="each pointer indexed with its own tensor's strides",
    bug_class="strides_layout",
    symptoms=("rows", "shape", "noncontig", "rows_permuted", "scattered"),
)
def stride_owner(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A pointer indexed with another tensor's stride (`x_ptr + row * idx_stride0`): use its own stride."""
    pointers = {p: p.lower().removesuffix("_ptr").removesuffix("ptr").strip("_") for p in _pointer_params(fn)}
    owners = set(pointers.values()) - {""}
    strides = [p.name.value for p in _params(fn) if "stride" in p.name.value.lower()]
    # Pointer expressions: what loads and stores address, and pointer variables built from a parameter.
    exprs = [call.args[0].value for call in _calls(fn.body, "tl.load", "tl.store") if call.args]
    exprs += [v for _, v in _assignments(fn.body) if _names(v) & set(pointers)]
    for ptr_expr in exprs:
        used = _names(ptr_expr)
        base = [p for p in pointers if p in used]
        if len(base) != 1:
            continue
        own = pointers[base[0]]
        for stride in sorted(used & set(strides)):
            tokens = _stride_tokens(stride)
            if own in tokens:
                continue
            wanted: list[list[str]] = []
            for i, t in enumerate(tokens):
                # `idx_stride0` (a token per tensor) or `stride_ab` (tensor letter then axis letter).
                for o in sorted(owners - {own}):
                    if t == o or (t.startswith(o) and t != "stride" and len(t) - len(o) <= 2):
                        wanted.append([*tokens[:i], own + t[len(o) :], *tokens[i + 1 :]])
            for candidate in strides:
                if _stride_tokens(candidate) in wanted:
                    mapping: dict[cst.CSTNode, cst.CSTNode] = {
                        n: cst.Name(candidate)
                        for n in findall(ptr_expr, m.Name(stride))
                        if isinstance(n, cst.Name)
                    }
                    new = _replace_many(tree.module, mapping)
                    what = f"{fn.name.value}: {base[0]} indexed with {candidate}, not {stride}"
                    yield Edit(new, tree.line(ptr_expr), what)


# ---------------------------------------------------------------- scans


@rule(
    "log_space_product",
    title="cumulative product with tl.cumprod, not exp(cumsum(log x))",
    bug_class="operator_misread",
    symptoms=("nan", "all_negative", "scattered", "everywhere"),
)
def log_space_product(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`exp(cumsum(log(x)))` is a product only for positive x: use `tl.cumprod`."""
    for exp in _calls(fn.body, "tl.exp", "tl.math.exp"):
        if len(exp.args) != 1:
            continue
        inner = exp.args[0].value
        if not (isinstance(inner, cst.Call) and _dotted(inner.func) == "tl.cumsum" and inner.args):
            continue
        log = inner.args[0].value
        if not (isinstance(log, cst.Call) and _dotted(log.func) in ("tl.log", "tl.math.log") and log.args):
            continue
        rest = ", ".join(_render(a).strip().rstrip(",") for a in inner.args[1:])
        operand = _render(log.args[0].value)
        new = _expr(f"tl.cumprod({operand}{', ' + rest if rest else ''})")
        what = f"{fn.name.value}: tl.cumprod({operand}) instead of exp(cumsum(log(...)))"
        yield tree.edit(exp, new, what)


@rule(
    "half_rounding",
    title="accumulate in half precision where the reference rounds every step",
    bug_class="rounding_semantics",
    symptoms=("scattered", "grows_with_magnitude", "x100", "everywhere"),
)
def half_rounding(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A half-precision reference rounds its running value every step: accumulate in the input's half type."""
    if context is None or not any(t in context.reference_source for t in ("float16", ".half()", "bfloat16")):
        return
    half = "tl.bfloat16" if "bfloat16" in context.reference_source else "tl.float16"
    for targets, value in _assignments(fn.body):
        if not (isinstance(value, cst.Call) and _dotted(value.func) in ("tl.zeros", "tl.full")):
            continue
        dtypes = [a for a in value.args if a.keyword is not None and a.keyword.value == "dtype"]
        if not dtypes or _dotted(dtypes[0].value) != "tl.float32":
            continue
        acc = sorted(targets)[0]
        mapping: dict[cst.CSTNode, cst.CSTNode] = {dtypes[0].value: _expr(half)}
        # Upcasts of what is added to the accumulator go too: the sum must round like the reference.
        for node in findall(fn.body, m.Assign() | m.AugAssign()):
            target = node.targets[0].target if isinstance(node, cst.Assign) else node.target  # type: ignore[union-attr]
            if not (isinstance(target, cst.Name) and target.value == acc):
                continue
            for call in findall(node.value, m.Call()):  # type: ignore[union-attr]
                if (
                    isinstance(call, cst.Call)
                    and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "to"
                    and call.args
                    and _dotted(call.args[0].value) == "tl.float32"
                ):
                    mapping[call] = call.func.value
        new = _replace_many(tree.module, mapping)
        what = f"{fn.name.value}: accumulate {acc} in {half.removeprefix('tl.')} like the reference"
        yield Edit(new, tree.line(value), what)


RULES = rules_of(__name__)
