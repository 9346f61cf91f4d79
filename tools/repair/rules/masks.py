"""Bounds masks and tails: which lanes a load or store may touch."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _arg,
    _assignments,
    _calls,
    _dotted,
    _expr,
    _is_arange,
    _is_number,
    _mask_expressions,
    _mask_names,
    _names,
    _paren,
    _reachable,
    _render,
    _replace_many,
    _scaled_by,
    _values_of,
    _with_kwarg,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- mask_le_to_lt


@rule(
    "mask_le_to_lt",
    title="bounds mask uses < n, not <= n",
    bug_class="tail_mask",
    symptoms=("tail_block", "trailing", "out_of_bounds_write", "garbage_region", "shape"),
    per="module",
)
def mask_le_to_lt(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    seen: set[int] = set()
    for expr in _mask_expressions(tree.module):
        for cmp in findall(expr, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            if id(cmp) in seen:
                continue
            seen.add(id(cmp))
            for i, target in enumerate(cmp.comparisons):
                left = cmp.left if i == 0 else cmp.comparisons[i - 1].comparator
                op = target.operator
                # `0 <= offs` / `offs >= 0` is a lower bound and right as written.
                if isinstance(op, cst.LessThanEqual) and not _is_number(left, 0):
                    strict: cst.BaseCompOp = cst.LessThan(
                        whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
                    )
                elif isinstance(op, cst.GreaterThanEqual) and not _is_number(target.comparator, 0):
                    strict = cst.GreaterThan(
                        whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
                    )
                else:
                    continue
                targets = list(cmp.comparisons)
                targets[i] = target.with_changes(operator=strict)
                new = tree.replace(cmp, cmp.with_changes(comparisons=targets))
                before = tree.code(cmp)
                after = cst.Module([]).code_for_node(cmp.with_changes(comparisons=targets))
                yield Edit(new, tree.line(cmp), f"mask: {before} -> {after}")


# ---------------------------------------------------------------- store_mask


@rule(
    "store_mask",
    title="tl.store masked like the loads",
    bug_class="tail_mask",
    symptoms=("out_of_bounds_write", "tail_block", "garbage_region", "shape"),
)
def store_mask(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    assigns = _assignments(fn.body)
    sources: dict[str, set[str]] = {}  # name -> names its assigned values read
    for targets, value in assigns:
        for t in targets:
            sources.setdefault(t, set()).update(_names(value))
    masks: list[str] = []
    for load in _calls(fn.body, "tl.load"):
        mask = _arg(load, "mask", 1)
        if mask is not None and _render(mask.value) not in masks:
            masks.append(_render(mask.value))
    for store in _calls(fn.body, "tl.store"):
        pointer = _arg(store, "pointer", 0)
        if pointer is None:
            continue
        # Offer a mask only where the store's addresses share an offset with it: a scalar store of a
        # reduction result (`out_ptr + pid`) must not take the vector mask.
        addressed = set().union(*(_reachable(n, sources) for n in _names(pointer.value)))
        current = _arg(store, "mask", 2)
        for mask in masks:
            names = _names(_expr(mask))
            reads = set().union(*(sources.get(n, {n}) for n in names))
            if not reads & addressed:
                continue
            line = tree.line(store.args[-1], end=True)
            if current is None:
                new = tree.replace(store, _with_kwarg(store, "mask", mask))
                desc = f"{fn.name.value}: tl.store gets mask={mask}, the mask its loads use"
            elif not names <= _names(current.value) and isinstance(current.value, cst.Comparison):
                # The store bounds one axis of a 2-D tile, its loads bound both: store under both.
                old = _render(current.value)
                # A load mask that already bounds the store's axis replaces it; otherwise both apply.
                both = _expr(mask if _names(current.value) <= names else f"({old}) & ({mask})")
                new = tree.replace(current.value, both)
                desc = f"{fn.name.value}: tl.store mask also takes its loads' {mask}"
            else:
                continue
            yield Edit(new, line, desc)


# ---------------------------------------------------------------- load_mask


@rule(
    "load_mask",
    title="tl.load masked like the kernel's other accesses",
    bug_class="tail_mask",
    symptoms=("tail_block", "trailing", "garbage_region", "shape", "runtime_error", "crash"),
)
def load_mask(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    sources: dict[str, set[str]] = {}
    for targets, value in _assignments(fn.body):
        for t in targets:
            sources.setdefault(t, set()).update(_names(value))
    for load in _calls(fn.body, "tl.load"):
        pointer = _arg(load, "pointer", 0)
        if pointer is None or _arg(load, "mask", 1) is not None:
            continue
        addressed = set().union(*(_reachable(n, sources) for n in _names(pointer.value)))
        for mask_name in _mask_names(fn):
            if mask_name in sources and not sources[mask_name] & addressed:
                continue
            new = tree.replace(load, _with_kwarg(_with_kwarg(load, "mask", mask_name), "other", "0.0"))
            line = tree.line(load.args[-1], end=True)
            desc = f"{fn.name.value}: tl.load gets mask={mask_name}, the mask the kernel uses elsewhere"
            yield Edit(new, line, desc)


# ---------------------------------------------------------------- mask_precedence


def _bitop(expr: cst.BaseExpression) -> bool:
    """An unparenthesised `a & b` or `a | b` (what binds tighter than a comparison without telling)."""
    return (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, cst.BitAnd | cst.BitOr)
        and not expr.lpar
    )


def _with_edge_leaf(
    expr: cst.BaseExpression, side: str, build: Callable[[cst.BaseExpression], cst.BaseExpression]
) -> cst.BaseExpression:
    """`expr` (a chain of unparenthesised & and |), its leftmost or rightmost operand `x` made `build(x)`."""
    if not _bitop(expr):
        return build(expr)
    assert isinstance(expr, cst.BinaryOperation)
    if side == "left":
        return expr.with_changes(left=_with_edge_leaf(expr.left, side, build))
    return expr.with_changes(right=_with_edge_leaf(expr.right, side, build))


def _regroup(cmp: cst.Comparison) -> cst.BaseExpression:
    """`k & a < M & j` -> `k & (a < M) & j`: the comparison around its true operands, the rightmost of what is
    on its left and the leftmost of what is on its right."""
    target = cmp.comparisons[0]
    subject = cmp.left
    while _bitop(subject):
        assert isinstance(subject, cst.BinaryOperation)
        subject = subject.right

    def compared(first: cst.BaseExpression) -> cst.BaseExpression:
        return _paren(cst.Comparison(left=subject, comparisons=[target.with_changes(comparator=first)]))

    right_side = _with_edge_leaf(target.comparator, "left", compared)
    new = _with_edge_leaf(cmp.left, "right", lambda _x: right_side)
    return new.with_changes(lpar=cmp.lpar, rpar=cmp.rpar)


@rule(
    "mask_precedence",
    title="parenthesise `a < M & b < N` into `(a < M) & (b < N)`",
    bug_class="tail_mask",
    symptoms=("tail_block", "trailing", "garbage_region", "shape", "rows", "columns"),
    per="module",
)
def mask_precedence(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`&` and `|` bind tighter than a comparison: `a < M & b < N` parses as `a < (M & b) < N`, `a < M & k`
    as `a < (M & k)`, `k & a < M` as `(k & a) < M`. Each comparison goes back around its own two operands:
    `(a < M) & (b < N)`, `(a < M) & k`, `k & (a < M)`. One site at a time, then every site at once (a
    matmul writes the same mask for A and for B)."""
    found: dict[cst.CSTNode, cst.CSTNode] = {}
    for cmp in findall(tree.module, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        if len(cmp.comparisons) == 2:
            middle = cmp.comparisons[0].comparator
            if not _bitop(middle):
                continue
            assert isinstance(middle, cst.BinaryOperation)
            left = cst.Comparison(
                left=cmp.left, comparisons=[cmp.comparisons[0].with_changes(comparator=middle.left)]
            )
            right = cst.Comparison(left=middle.right, comparisons=[cmp.comparisons[1]])
            new_node: cst.BaseExpression = cst.BinaryOperation(
                left=_paren(left), operator=middle.operator, right=_paren(right), lpar=cmp.lpar, rpar=cmp.rpar
            )
        elif len(cmp.comparisons) == 1 and (_bitop(cmp.left) or _bitop(cmp.comparisons[0].comparator)):
            new_node = _regroup(cmp)
        else:
            continue
        found[cmp] = new_node
        what = f"{tree.code(cmp)} -> {_render(new_node)}"
        yield tree.edit(cmp, new_node, what)
    if len(found) > 1:
        first = next(iter(found))
        what = f"every comparison regrouped around its operands ({len(found)} sites)"
        yield Edit(_replace_many(tree.module, found), tree.line(first), what)


@rule(
    "mask_offsets",
    title="bounds mask built from the right (local vs global) offsets",
    bug_class="tail_mask",
    symptoms=("tail_block", "rows", "leading", "zero_region", "untouched_region", "shape"),
)
def mask_offsets(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A bounds mask compares the local lane offsets, not the global ones (or the other way round)."""
    values = _values_of(fn)
    local = [n for n, vs in values.items() if len(vs) == 1 and _is_arange(vs[0])]
    arange_names = set(local)
    glob = [
        n
        for n, vs in values.items()
        if len(vs) == 1
        and not _is_arange(vs[0])
        and (_calls(vs[0], "tl.arange") or _names(vs[0]) & arange_names)
        and "mask" not in n.lower()
    ]
    for targets, value in _assignments(fn.body):
        if not any("mask" in t.lower() for t in targets) or not isinstance(value, cst.Comparison):
            continue
        side = value.left
        if not isinstance(side, cst.Name):
            continue
        options = glob if side.value in local else local if side.value in glob else []
        for other in options:
            if other == side.value:
                continue
            new = tree.replace(side, side.with_changes(value=other))
            what = f"{fn.name.value}: mask compares {other}, not {side.value}"
            yield Edit(new, tree.line(side), what)
    # A mask written inline at each load and store (`mask=offsets < n_cols`) compares global offsets: every
    # such comparison takes the local lanes, a local name or the arange the offsets were built from.
    inline: dict[str, list[cst.Name]] = {}
    for call in _calls(fn.body, "tl.load", "tl.store"):
        arg = _arg(call, "mask", 1 if _dotted(call.func) == "tl.load" else 2)
        if arg is not None and isinstance(arg.value, cst.Comparison) and isinstance(arg.value.left, cst.Name):
            if arg.value.left.value in glob:
                inline.setdefault(arg.value.left.value, []).append(arg.value.left)
    for name, sides in inline.items():
        aranges = [_render(a) for v in values[name] for a in _calls(v, "tl.arange")]
        blocks = [_render(a.args[1].value).strip() for v in values[name] for a in _calls(v, "tl.arange")]
        if any(_scaled_by(_render(fn.body), b) for b in blocks):
            continue  # programs tile the flat range by the block: the global offsets are the lanes
        aranges += [_render(values[n][0]) for n in _names(values[name][0]) if n in local]
        lanes = [n for n in local if _render(values[n][0]) in aranges] + aranges
        for other in dict.fromkeys(lanes):
            new = _replace_many(tree.module, {side: _expr(other) for side in sides})
            what = f"{fn.name.value}: masks compare {other}, not {name}"
            yield Edit(new, tree.line(sides[0]), what)


RULES = rules_of(__name__)
