"""The reference's conv/pool call and the roles of geometry names (kernel, stride, padding, dilation).

The conv/pool rules (`conv_sizes`, `conv_windows`, `conv_layout`) follow PyTorch's definitions
(`torch.nn.Conv*d`, `MaxPool*d`, `AvgPool*d`): an output position o reads input
`o * stride - padding + tap * dilation`, taps outside [0, size) are padding, and the output size is
`(size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1` (ceil_mode rounds up, but the last window
must start inside the input or the left padding). Height and width (or D/H/W) are written on twin lines
that one bug breaks alike, so every rule edits all twins in one rewrite.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    RuleContext,
    Tree,
    _dotted,
    _kernels,
    _launches,
    _names,
    _params,
    _render,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- the reference's operator


@dataclass
class _Spec:
    """Geometry of the reference's convolution or pooling call (None where unknown)."""

    kind: str  # "conv", "max", "avg"
    dims: int
    values: dict[str, Any] = field(default_factory=dict)  # kernel_size, stride, padding, dilation, ...

    def get(self, key: str, dim: int = 0) -> Any:
        value = self.values.get(key)
        if isinstance(value, tuple | list):
            return value[dim] if dim < len(value) else None
        return value


# Argument names after the tensor inputs, in positional order.
_SIGNATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "conv_module": ("conv", ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation")),
    "conv_fn": ("conv", ("input", "weight", "bias", "stride", "padding", "dilation")),
    "max_module": ("max", ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode")),
    "max_fn": ("max", ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode")),
    "avg_module": ("avg", ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")),
    "avg_fn": ("avg", ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")),
}


def _signature(func: str) -> tuple[str, int] | None:
    last = func.split(".")[-1]
    match = re.fullmatch(r"(Conv|conv|MaxPool|max_pool|AvgPool|avg_pool)([123])d", last)
    if match is None:
        return None
    stem = {"conv": "conv", "maxpool": "max", "max_pool": "max", "avgpool": "avg", "avg_pool": "avg"}
    kind = stem[match.group(1).lower()]
    return f"{kind}_{'module' if match.group(1)[0].isupper() else 'fn'}", int(match.group(2))


def _static(node: ast.expr, env: dict[str, Any]) -> Any:
    """The value of a small constant expression over known names, else None."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Tuple | ast.List):
        items = [_static(e, env) for e in node.elts]
        return None if any(i is None for i in items) else tuple(items)
    if isinstance(node, ast.BinOp):
        left, right = _static(node.left, env), _static(node.right, env)
        if isinstance(left, int) and isinstance(right, int):
            ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__}
            if isinstance(node.op, ast.FloorDiv) and right:
                return left // right
            fn = ops.get(type(node.op))
            return fn(left, right) if fn else None
    return None


def _reference_spec(context: RuleContext | None) -> _Spec | None:
    if context is None:
        return None
    try:
        module = ast.parse(context.reference_source)
    except SyntaxError:
        return None
    env: dict[str, Any] = {}
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _static(stmt.value, env)
            if value is not None:
                env[stmt.targets[0].id] = value
    env.update({k: v for k, v in context.init_params().items() if v is not None})
    for call in ast.walk(module):
        if not isinstance(call, ast.Call):
            continue
        func = ast.unparse(call.func)
        found = _signature(func)
        if found is None:
            continue
        key, dims = found
        kind, names = _SIGNATURES[key]
        values: dict[str, Any] = {}
        for name, arg in zip(names, call.args, strict=False):
            values[name] = _static(arg, env)
        for kw in call.keywords:
            if kw.arg:
                values[kw.arg] = _static(kw.value, env)
        defaults = {"padding": 0, "dilation": 1, "ceil_mode": False, "count_include_pad": True}
        for name, default in defaults.items():
            if name not in values:
                values[name] = default
        if values.get("stride") is None:
            values["stride"] = values.get("kernel_size") if kind != "conv" else 1
        return _Spec(kind, dims, values)
    return None


# ---------------------------------------------------------------- roles of names

_KERNEL_NAMES = {
    "k",
    "kh",
    "kw",
    "kd",
    "kl",
    "ks",
    "k_h",
    "k_w",
    "k_d",
    "ksize",
    "window",
    "win",
    "pool",
    "r_k",
}


def _role(code: str) -> str:
    """'k' kernel size, 's' stride, 'p' padding, 'd' dilation, else 'h' (a size or anything else)."""
    text = code.replace("self.", "")
    base = re.split(r"\[", text)[0]
    last = base.split(".")[-1].lower()
    if last == "shape" and re.search(r"(^|\.)(w|weight)\.shape$|weight", base):
        return "k"
    if "dil" in last:
        return "d"
    if "pad" in last or last in ("p", "ph", "pw", "pd", "pl"):
        return "p"
    if "stride" in last or last in ("s", "st", "sh", "sw", "sd", "sl", "step"):
        return "s"
    if "kernel" in last or last in _KERNEL_NAMES or last.startswith(("ks", "pool_size", "window")):
        return "k"
    return "h"


def _atom(code: str) -> str:
    return code if re.fullmatch(r"[\w.]+(\[[^\]]*\])?(\([^()]*\))?", code.strip()) else f"({code})"


def _dim_letter(name: str) -> str:
    """The axis letter a name refers to: `PAD_H` -> h, `iw` -> w, `W` -> w, `src` -> ''."""
    low = name.lower()
    for word in ("stride", "pad", "dil", "kernel", "size", "in", "out", "_"):
        low = low.replace(word, "")
    letters = [c for c in low if c in "dhwl"]
    return letters[-1] if letters else ""


# ---------------------------------------------------------------- edits that insert statements


class _Edit(cst.CSTTransformer):
    """Replace nodes and insert statements after statements, all by identity, in one pass."""

    def __init__(
        self,
        replace: dict[cst.CSTNode, cst.CSTNode] | None = None,
        after: dict[cst.CSTNode, list[str]] | None = None,
    ) -> None:
        self.replace = replace or {}
        self.after = after or {}

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        if original_node in self.replace:
            return self.replace[original_node]
        if isinstance(updated_node, cst.IndentedBlock) and isinstance(original_node, cst.IndentedBlock):
            body: list[cst.BaseStatement] = []
            for old, new in zip(original_node.body, updated_node.body, strict=True):
                body.append(new)
                body += [cst.parse_statement(s + "\n") for s in self.after.get(old, [])]
            return updated_node.with_changes(body=body)
        return updated_node


def _apply(
    tree: Tree,
    replace: dict[cst.CSTNode, cst.CSTNode] | None = None,
    after: dict[cst.CSTNode, list[str]] | None = None,
) -> cst.Module:
    return tree.module.visit(_Edit(replace, after))


def _statement(tree: Tree, node: cst.CSTNode) -> cst.CSTNode | None:
    """The block-level statement holding `node`."""
    stmt: cst.CSTNode | None = node
    while stmt is not None and not isinstance(tree.parent(stmt), cst.IndentedBlock):
        stmt = tree.parent(stmt)
    return stmt


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    kernels = {id(k) for k in _kernels(module)}
    return [
        f
        for f in findall(module, m.FunctionDef())
        if isinstance(f, cst.FunctionDef) and id(f) not in kernels
    ]


def _pick(candidates: list[str], size: str) -> str | None:
    """The candidate for the same axis as `size` (PAD_H for H), else the first."""
    letter = _dim_letter(size)
    for c in candidates:
        if letter and _dim_letter(c) == letter:
            return c
    plain = [c for c in candidates if not _dim_letter(c)]
    return plain[0] if plain else candidates[0] if candidates else None


def _fresh(fn: cst.FunctionDef, base: str) -> str:
    used = set().union(*(_names(s) for s in fn.body.body))
    name, i = base, 1
    while name in used:
        name, i = f"{base}{i}", i + 1
    return name


def _launch_args(module: cst.Module, fn: cst.FunctionDef) -> dict[str, str]:
    """Kernel parameter -> the source text a launch passes for it."""
    names = [p.name.value for p in _params(fn)]
    out: dict[str, str] = {}
    for call in _launches(module):
        func = call.func
        if not (isinstance(func, cst.Subscript) and _dotted(func.value) == fn.name.value):
            continue
        positional = [a for a in call.args if a.keyword is None and not a.star]
        for name, a in zip(names, positional, strict=False):
            out[name] = _render(a.value)
        for a in call.args:
            if a.keyword is not None:
                out[a.keyword.value] = _render(a.value)
    return out


RULES = rules_of(__name__)
