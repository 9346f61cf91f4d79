"""Static code features of a candidate: Triton constructs the bug taxonomy links to a bug class.

Pure `ast` over the source (the candidate never runs here). Each feature names the line it was found on, so a
hypothesis it supports can point at a suspected location.
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass
from typing import Any

_REDUCE_EXTREME = {"max", "min", "argmax", "argmin"}
_HALF_DTYPES = {"float16", "bfloat16"}
_COUNT_NAME = re.compile(r"^(n|N|n_cols|ncols|n_elements|numel|count|cnt|num_\w+|n_\w+|N_\w+|\w*_size)$")
_ROW_NAME = re.compile(r"(row|pid|program)", re.IGNORECASE)
_COLS_NAME = re.compile(r"^(n_cols|ncols|N|n|num_cols|n_col|D|dim|hidden\w*)$")
# Literals that are structural (identity, halves, doubling) rather than an operator's tunable parameter.
_PLAIN_CONSTANTS = {0.0, 1.0, -1.0, 2.0, 0.5, 3.0}


@dataclass(frozen=True)
class Feature:
    kind: str
    line: int
    bug_class: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def tl_name(call: ast.Call) -> str | None:
    """`max` for tl.max / triton.language.max / tl.math.max; None for other calls."""
    name = _dotted(call.func)
    if name is None:
        return None
    for prefix in ("tl.math.", "tl.", "triton.language.math.", "triton.language."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


def _calls(root: ast.AST, *names: str) -> list[ast.Call]:
    return [n for n in ast.walk(root) if isinstance(n, ast.Call) and tl_name(n) in names]


def _kwarg(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_zero(node: ast.expr | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_zero(node.operand)
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) and node.value == 0


def jit_kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    """Functions decorated with @triton.jit / @jit (with or without arguments)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if _dotted(target) in ("triton.jit", "jit"):
                    out.append(node)
    return out


def stub_kernels(source: str) -> list[str]:
    """The `@triton.jit` kernels whose body is only a docstring, `pass` or `...`, when every kernel is one.

    A generation that left its kernel unwritten ("# Triton kernel code here") is not a near-miss: there is
    nothing to repair, only to write. Empty when the source does not parse or any kernel has a body.
    """
    try:
        kernels = jit_kernels(ast.parse(source))
    except (SyntaxError, ValueError):
        return []

    def empty(stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        )

    if kernels and all(all(empty(stmt) for stmt in fn.body) for fn in kernels):
        return [fn.name for fn in kernels]
    return []


def constexpr_params(fn: ast.FunctionDef) -> list[str]:
    return [
        a.arg
        for a in fn.args.args
        if a.annotation is not None and (_dotted(a.annotation) or "").endswith("constexpr")
    ]


def _launches(tree: ast.Module, kernels: dict[str, ast.FunctionDef]) -> list[tuple[ast.Call, ast.Subscript]]:
    """(call, `kernel[grid]` subscript) for every launch of a known kernel."""
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in kernels
        ):
            out.append((node, node.func))
    return out


def _assignments(fn: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.value is not None:
                out.setdefault(node.target.id, []).append(node.value)
    return out


def _flows_into(name: str, target: ast.expr, assigns: dict[str, list[ast.expr]], depth: int = 3) -> bool:
    """True when variable `name` is read by `target`, directly or through up to `depth` assignments."""
    seen = _names(target)
    if name in seen:
        return True
    if depth == 0:
        return False
    return any(_flows_into(name, value, assigns, depth - 1) for n in seen for value in assigns.get(n, []))


def _stride_index(node: ast.expr) -> tuple[str, int] | None:
    """(tensor, dim) for `t.stride(dim)`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "stride"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, int)
    ):
        return (ast.unparse(node.func.value), node.args[0].value)
    return None


def _stride_rank(param: str) -> int | None:
    """The dimension a stride parameter names: stride_xm / stride_row → 0, stride_xn / stride_col → 1."""
    low = param.lower()
    if "stride" not in low:
        return None
    tail = low.replace("stride", "").strip("_")
    for rank, suffixes in ((0, ("row", "0", "m", "b", "batch", "h")), (1, ("col", "1", "n", "k", "d"))):
        if any(tail.endswith(s) or tail.startswith(s) for s in suffixes):
            return rank
    return None


def static_features(source: str) -> list[Feature]:
    """Every feature found, in line order; an unparsable source has none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    kernels = {fn.name: fn for fn in jit_kernels(tree)}
    found: list[Feature] = []

    def add(kind: str, node: ast.AST, bug_class: str, detail: str) -> None:
        feature = Feature(kind, getattr(node, "lineno", 0), bug_class, detail)
        if feature not in found:
            found.append(feature)

    for fn in kernels.values():
        _kernel_features(fn, add)
    _launch_features(tree, kernels, add)
    _wrapper_features(tree, kernels, add)
    return sorted(found, key=lambda f: (f.line, f.kind))


def _kernel_features(fn: ast.FunctionDef, add: Any) -> None:
    assigns = _assignments(fn)
    constexprs = set(constexpr_params(fn))
    loads = _calls(fn, "load")
    masked_loads = [c for c in loads if _kwarg(c, "mask", 1) is not None]

    # A masked load padded with 0 (or unpadded) that feeds max/min: padding wins on all-negative rows.
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and node.value in masked_loads:
            other = _kwarg(node.value, "other", 2)
            if other is not None and not _is_zero(other):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            for red in _calls(fn, *_REDUCE_EXTREME):
                if red.args and any(_flows_into(n, red.args[0], assigns) for n in names):
                    add(
                        "load_other_zero_into_max",
                        node,
                        "neutral_element",
                        f"masked tl.load padded with {'0' if other is not None else 'nothing'} "
                        f"feeds tl.{tl_name(red)} (line {red.lineno})",
                    )
    for node in ast.walk(fn):
        # A block-size constexpr as a divisor: normalising by the padded block, not the true count.
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv):
            right = node.right
            if isinstance(right, ast.Name) and right.id in constexprs and "BLOCK" in right.id.upper():
                add("block_divisor", node, "normalisation", f"divides by the block size {right.id}")
            elif isinstance(right, ast.Name) and _COUNT_NAME.match(right.id) and _calls(node.left, "sum"):
                add("divide_by_count", node, "normalisation", f"a sum divided by the count {right.id}")
            elif isinstance(right, ast.BinOp) and isinstance(right.op, ast.Sub) and _calls(node.left, "sum"):
                add("divide_by_count", node, "normalisation", f"a sum divided by {ast.unparse(right)}")
        # sqrt(v) + eps: eps outside the square root.
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                if (
                    isinstance(side, ast.Call)
                    and tl_name(side) in ("sqrt", "sqrt_rn")
                    and "eps" in ast.unparse(other).lower()
                ):
                    add("sqrt_plus_eps", node, "numerical_stability", "eps added outside the square root")
        # `<=` in a bounds mask.
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.LtE) for op in node.ops):
            add("mask_le", node, "tail_mask", f"`<=` bound: {ast.unparse(node)}")
        # row * n_cols pointer arithmetic ignores the row stride.
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            pair = (node.left, node.right)
            names = [p.id for p in pair if isinstance(p, ast.Name)]
            if len(names) == 2 and (
                (_ROW_NAME.search(names[0]) and _COLS_NAME.match(names[1]))
                or (_ROW_NAME.search(names[1]) and _COLS_NAME.match(names[0]))
            ):
                add(
                    "row_times_ncols",
                    node,
                    "strides_layout",
                    f"{ast.unparse(node)}: row offset without stride",
                )
        # Hard-coded activation parameter (slope, beta, threshold) instead of the constructor's.
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, float)
            and node.value not in _PLAIN_CONSTANTS
            and abs(node.value) < 1e3
            and abs(node.value) > 1e-4
        ):
            add("hardcoded_constant", node, "operator_misread", f"hard-coded constant {node.value!r}")
        # K loop with floor division: the K tail is never visited.
        if (
            isinstance(node, ast.For)
            and isinstance(node.iter, ast.Call)
            and _dotted(node.iter.func)
            in (
                "range",
                "tl.range",
                "tl.static_range",
            )
        ):
            for arg in node.iter.args:
                if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.FloorDiv):
                    add("loop_floor_div", node, "k_loop", f"loop bound {ast.unparse(arg)} drops the tail")
    # Half-precision accumulator.
    for call in _calls(fn, "zeros", "full"):
        dtype = _kwarg(call, "dtype", 1 if tl_name(call) == "zeros" else 2)
        if dtype is not None and (_dotted(dtype) or "").split(".")[-1] in _HALF_DTYPES:
            add("half_accumulator", call, "accumulation_precision", f"accumulator in {ast.unparse(dtype)}")
    # Unmasked store while the loads are masked.
    if masked_loads:
        for store in _calls(fn, "store"):
            if _kwarg(store, "mask", 2) is None:
                add("store_without_mask", store, "tail_mask", "tl.store unmasked, loads masked")
    # exp without a max anywhere: no max subtraction.
    exps = _calls(fn, "exp", "exp2")
    if exps and not _calls(fn, "max", "maximum"):
        add("exp_without_max", exps[0], "numerical_stability", "tl.exp with no max subtraction in the kernel")


def _launch_features(tree: ast.Module, kernels: dict[str, ast.FunctionDef], add: Any) -> None:
    for call, sub in _launches(tree, kernels):
        fn = kernels[sub.value.id]  # type: ignore[union-attr]
        for node in ast.walk(sub.slice):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
                add("grid_floor_div", node, "grid_coverage", f"launch grid {ast.unparse(node)} rounds down")
        params = [a.arg for a in fn.args.args]
        bound: dict[str, ast.expr] = dict(zip(params, call.args))
        bound.update({kw.arg: kw.value for kw in call.keywords if kw.arg})
        # Consecutive stride parameters bound to one tensor's strides in the other order.
        for a, b in zip(params, params[1:]):
            ra, rb = _stride_rank(a), _stride_rank(b)
            sa = _stride_index(bound[a]) if a in bound else None
            sb = _stride_index(bound[b]) if b in bound else None
            if None in (ra, rb, sa, sb) or ra == rb:
                continue
            assert sa is not None and sb is not None and ra is not None and rb is not None
            if sa[0] == sb[0] and (ra < rb) != (sa[1] < sb[1]):
                add(
                    "swapped_strides",
                    bound[a],
                    "strides_layout",
                    f"{a}, {b} receive {ast.unparse(bound[a])}, {ast.unparse(bound[b])} (swapped)",
                )


def _wrapper_features(tree: ast.Module, kernels: dict[str, ast.FunctionDef], add: Any) -> None:
    launches = _launches(tree, kernels)
    if not launches:
        return
    text_calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    contiguous = any(c.func.attr == "contiguous" for c in text_calls)  # type: ignore[union-attr]
    strides_used = any(c.func.attr == "stride" for c in text_calls)  # type: ignore[union-attr]
    stride_params = any("stride" in a.arg.lower() for fn in kernels.values() for a in fn.args.args)
    if not contiguous and not strides_used and not stride_params:
        add(
            "ignores_strides",
            launches[0][0],
            "strides_layout",
            "no .contiguous() and the kernel takes no strides: assumes contiguous inputs",
        )
