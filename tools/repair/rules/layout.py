"""Strides, memory layout and program ids: which element each offset addresses."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    _SCALAR_TYPES,
    Edit,
    RuleContext,
    Tree,
    _after_docstring,
    _arg,
    _calls,
    _constexpr_params,
    _dotted,
    _expr,
    _kernels,
    _launches,
    _names,
    _params,
    _program_id_names,
    _render,
    _replace_many,
    _swap,
    _values_of,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall


@rule(
    "contiguous_inputs",
    title="make forward's tensor inputs contiguous",
    bug_class="strides_layout",
    symptoms=("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered"),
    per="forward",
)
def contiguous_inputs(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    if not isinstance(fn.body, cst.IndentedBlock):
        return
    body = fn.body
    already = {
        c.func.value.value
        for c in findall(body, m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("contiguous"))))
        if isinstance(c, cst.Call)
        and isinstance(c.func, cst.Attribute)
        and isinstance(c.func.value, cst.Name)
    }
    params = [p for p in _params(fn) if p.name.value != "self"]
    todo = [
        p.name.value
        for p in params
        if p.name.value not in already
        and not (p.annotation and _dotted(p.annotation.annotation) in _SCALAR_TYPES)
    ]
    at = _after_docstring(body)
    line = tree.line(body.body[at]) if at < len(body.body) else tree.line(fn)
    groups = [[x] for x in todo] + ([todo] if len(todo) > 1 else [])
    for group in groups:
        stmts = [cst.parse_statement(f"{x} = {x}.contiguous()\n") for x in group]
        new_body = body.with_changes(body=[*body.body[:at], *stmts, *body.body[at:]])
        what = "ModelNew.forward: make " + ", ".join(group) + " contiguous first"
        yield Edit(tree.replace(body, new_body), line, what)


# ---------------------------------------------------------------- contiguous_view

# Views whose elements are not laid out as a contiguous tensor of their shape (a reshape or view of one is
# still strided where it does not copy).
_PERMUTING = {
    "t", "T", "mT", "mH", "transpose", "permute", "movedim", "swapaxes", "swapdims", "expand", "expand_as",
}  # fmt: skip


def _strided_view(expr: cst.BaseExpression) -> bool:
    """`w.t()`, `q.transpose(1, 2)`, `x.permute(...).reshape(...)`, `x.T`, `x[:, ::2]`: a strided view."""
    node = expr
    while True:
        if isinstance(node, cst.Call):
            node = node.func
        if isinstance(node, cst.Attribute):
            if node.attr.value in _PERMUTING:
                return True
            node = node.value
        elif isinstance(node, cst.Subscript):
            steps = [e for e in node.slice if isinstance(e.slice, cst.Slice) and e.slice.step is not None]
            later = [e for e in node.slice[1:] if isinstance(e.slice, cst.Slice)]
            if steps or later:
                return True
            node = node.value
        else:
            return False


@rule(
    "contiguous_view",
    title="a strided view handed to a kernel without its strides is made contiguous",
    bug_class="strides_layout",
    symptoms=("transposed", "rows_permuted", "scattered", "periodic", "shifted", "everywhere", "rows"),
    per="module",
)
def contiguous_view(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """A wrapper hands a kernel a transposed or permuted view (`w_t = weight.t()`, `q.transpose(1, 2)`) but
    none of its strides: the kernel indexes it as a contiguous tensor of its shape and reads the storage in
    another order. The view is made contiguous where it is made; every such view at once, and each alone."""
    kernels = set(_kernels(tree.module))
    sites: list[cst.BaseExpression] = []
    for fn in findall(tree.module, m.FunctionDef()):
        if not isinstance(fn, cst.FunctionDef) or fn in kernels:
            continue
        values = _values_of(fn)
        for launch in _launches(fn):  # type: ignore[arg-type]
            text = _render(launch)
            for arg in launch.args:
                value = arg.value
                if isinstance(value, cst.Name):
                    made = values.get(value.value, [])
                    if len(made) != 1 or f"{value.value}.stride(" in text or not _strided_view(made[0]):
                        continue
                    value = made[0]
                elif not _strided_view(value):
                    continue
                if not any(value is s for s in sites):
                    sites.append(value)

    def contiguous(node: cst.BaseExpression) -> cst.BaseExpression:
        code = _render(node.with_changes(lpar=[], rpar=[]))
        atomic = isinstance(node, cst.Call | cst.Attribute | cst.Subscript | cst.Name)
        return _expr(f"{code}.contiguous()" if atomic else f"({code}).contiguous()")

    if len(sites) > 1:
        new = _replace_many(tree.module, {s: contiguous(s) for s in sites})
        also = tuple(tree.line(s) for s in sites[1:])
        yield Edit(new, tree.line(sites[0]), f"{len(sites)} strided views made contiguous", also)
    for site in sites:
        yield tree.edit(site, contiguous(site), f"{_render(site)} made contiguous before the launch")


# ---------------------------------------------------------------- strides


def _is_stride(expr: cst.BaseExpression) -> bool:
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "stride"
    ):
        return True
    return isinstance(expr, cst.Name) and "stride" in expr.value.lower()


def _stride_pair(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Two strides of one tensor (`x.stride(0), x.stride(1)`) or two stride variables."""
    if isinstance(a, cst.Call) and isinstance(b, cst.Call) and _is_stride(a) and _is_stride(b):
        return _render(a.func) == _render(b.func)
    return isinstance(a, cst.Name) and isinstance(b, cst.Name) and _is_stride(a) and _is_stride(b)


@rule(
    "stride_args_swap",
    title="launch passes a stride pair in the kernel's order",
    bug_class="strides_layout",
    symptoms=("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered"),
    per="module",
)
def stride_args_swap(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Two adjacent stride arguments of a launch passed in the wrong order: positional, or by keyword with
    the values under each other's names (`stride_bn=b.stride(0), stride_bk=b.stride(1)`)."""
    for call in _launches(tree.module):
        args = call.args
        for i in range(len(args) - 1):
            a, b = args[i], args[i + 1]
            if (a.keyword is None) == (b.keyword is None) and _stride_pair(a.value, b.value):
                what = f"launch: swap {tree.code(a.value)} and {tree.code(b.value)}"
                yield Edit(_swap(tree, call, i, i + 1), tree.line(a), what)


@rule(
    "stride_index",
    title="stride(0) vs stride(1)",
    bug_class="strides_layout",
    symptoms=("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered", "rows"),
    per="module",
)
def stride_index(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`t.stride(0)` where `t.stride(1)` was meant, or the other way round."""
    for call in findall(tree.module, m.Call(func=m.Attribute(attr=m.Name("stride")))):
        assert isinstance(call, cst.Call)
        if len(call.args) != 1 or not isinstance(call.args[0].value, cst.Integer):
            continue
        index = call.args[0].value
        swapped = {"0": "1", "1": "0", "-1": "-2", "-2": "-1"}.get(index.value)
        if swapped is None:
            continue
        new = tree.replace(index, index.with_changes(value=swapped))
        what = f"{tree.code(call)} -> stride({swapped})"
        yield Edit(new, tree.line(call), what)


@rule(
    "row_times_stride",
    title="row offset uses the row stride, not the row length",
    bug_class="strides_layout",
    symptoms=("noncontig", "rows", "shifted", "rows_permuted", "periodic"),
)
def row_times_stride(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`row * n_cols` addresses a packed tensor: use the row stride the kernel receives."""
    params = [p.name.value for p in _params(fn)]
    strides = [p for p in params if "stride" in p.lower()]
    plain = {p for p in params if "stride" not in p.lower() and "ptr" not in p.lower()} - _constexpr_params(
        fn
    )
    rows = _program_id_names(fn) | {"row", "row_idx", "pid"}
    if not strides:
        return
    for op in findall(fn.body, m.BinaryOperation(operator=m.Multiply())):
        assert isinstance(op, cst.BinaryOperation)
        for row, size in ((op.left, op.right), (op.right, op.left)):
            if isinstance(row, cst.Name | cst.Call) and isinstance(size, cst.Name) and size.value in plain:
                if isinstance(row, cst.Name) and row.value not in rows:
                    continue
                if isinstance(row, cst.Call) and _dotted(row.func) != "tl.program_id":
                    continue
                for stride in strides:
                    new = tree.replace(size, size.with_changes(value=stride))
                    what = f"{fn.name.value}: {tree.code(op)} uses {stride}, not {size.value}"
                    yield Edit(new, tree.line(size), what)


# ---------------------------------------------------------------- program ids, reduction axis, broadcast


@rule(
    "program_id_swap",
    title="pid_m / pid_n read the right grid axes",
    bug_class="grid_coverage",
    symptoms=("transposed", "shape", "untouched_region", "zero_region", "columns", "rows"),
)
def program_id_swap(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """pid_m and pid_n read from each other's grid axis: swap axes 0 and 1 throughout the kernel."""
    sites = []
    for call in _calls(fn.body, "tl.program_id"):
        axis = _arg(call, "axis", 0)
        if axis is not None and isinstance(axis.value, cst.Integer) and axis.value.value in ("0", "1"):
            sites.append(axis.value)
    if {s.value for s in sites} != {"0", "1"}:
        return

    class Swap(cst.CSTTransformer):
        def __init__(self, sites: list[cst.Integer]) -> None:
            super().__init__()
            self.sites = sites

        def leave_Integer(self, original: cst.Integer, updated: cst.Integer) -> cst.Integer:
            if any(original is s for s in self.sites):
                return updated.with_changes(value="1" if original.value == "0" else "0")
            return updated

    new_fn = fn.visit(Swap(sites))
    new = tree.replace(fn, new_fn)
    line = min(tree.line(s) for s in sites)
    yield Edit(new, line, f"{fn.name.value}: swap program_id axes 0 and 1")


_REDUCTIONS = ("tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin", "tl.cumsum", "tl.cumprod", "tl.reduce")


@rule(
    "reduction_axis",
    title="reduce over the other axis",
    bug_class="strides_layout",
    symptoms=("transposed", "columns", "rows", "shape", "everywhere"),
    per="module",
)
def reduction_axis(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    for call in _calls(tree.module, *_REDUCTIONS):
        axis = _arg(call, "axis", 1)
        if axis is None or not isinstance(axis.value, cst.Integer) or axis.value.value not in ("0", "1"):
            continue
        other = "1" if axis.value.value == "0" else "0"
        new = tree.replace(axis.value, axis.value.with_changes(value=other))
        what = f"{_dotted(call.func)}: reduce over axis {other}, not {axis.value.value}"
        yield Edit(new, tree.line(axis.value), what)


@rule(
    "bias_broadcast_axis",
    title="bias broadcast along the other axis",
    bug_class="strides_layout",
    symptoms=("columns", "rows", "periodic", "everywhere"),
)
def bias_broadcast_axis(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A per-column bias broadcast as `b[:, None]` (per row), or the other way round."""
    values = _values_of(fn)
    biases = {
        n
        for n, vs in values.items()
        if "bias" in n.lower()
        or any(
            "bias" in p.lower() or p.lower() in ("b", "b_ptr")
            for v in vs
            for ld in _calls(v, "tl.load")
            for p in _names(ld)
        )
    }
    for sub in findall(fn.body, m.Subscript(value=m.Name())):
        assert isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name)
        if sub.value.value not in biases or len(sub.slice) != 2:
            continue
        parts = [_render(s.slice).strip() for s in sub.slice]
        if sorted(parts) != [":", "None"]:
            continue
        flipped = _expr(f"{sub.value.value}[{parts[1]}, {parts[0]}]")
        what = f"{fn.name.value}: broadcast {sub.value.value} along the other axis"
        yield tree.edit(sub, flipped, what)


RULES = rules_of(__name__)
