"""Offline rules for convolution and pooling geometry: output size, input coordinates, padding bounds,
count_include_pad, bias, batch index and input strides.

They follow PyTorch's definitions (`torch.nn.Conv*d`, `MaxPool*d`, `AvgPool*d`): an output position o reads
input `o * stride - padding + tap * dilation`, taps outside [0, size) are padding, and the output size is
`(size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1` (ceil_mode rounds up, but the last window
must start inside the input or the left padding). Height and width (or D/H/W) are written on twin lines
that one bug breaks alike, so every rule edits all twins in one rewrite.
"""

from __future__ import annotations

import ast
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.core import (
    Rewrite,
    Rule,
    RuleContext,
    RuleFn,
    _arg,
    _assignments,
    _calls,
    _constexpr_params,
    _dotted,
    _expr,
    _is_number,
    _kernels,
    _launches,
    _mask_names,
    _names,
    _params,
    _program_id_names,
    _render,
    _rewrite,
    _Tree,
    _tree,
)

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
    tree: _Tree,
    replace: dict[cst.CSTNode, cst.CSTNode] | None = None,
    after: dict[cst.CSTNode, list[str]] | None = None,
) -> cst.Module:
    return tree.module.visit(_Edit(replace, after))


def _statement(tree: _Tree, node: cst.CSTNode) -> cst.CSTNode | None:
    """The block-level statement holding `node`."""
    stmt: cst.CSTNode | None = node
    while stmt is not None and not isinstance(tree.parent(stmt), cst.IndentedBlock):
        stmt = tree.parent(stmt)
    return stmt


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    kernels = {id(k) for k in _kernels(module)}
    return [
        f
        for f in m.findall(module, m.FunctionDef())
        if isinstance(f, cst.FunctionDef) and id(f) not in kernels
    ]


# ---------------------------------------------------------------- conv_out_size: the wrapper's output size


_FUNCS = {"math.floor", "math.ceil", "triton.cdiv", "int", "max", "min", "abs"}


def _leaves(expr: cst.CSTNode) -> list[cst.BaseExpression]:
    """Maximal operands of an arithmetic expression: names, attributes, subscripts, unknown calls."""
    out: list[cst.BaseExpression] = []

    def walk(node: cst.CSTNode) -> None:
        if isinstance(node, cst.BinaryOperation):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, cst.UnaryOperation):
            walk(node.expression)
        elif isinstance(node, cst.Call) and _dotted(node.func) in _FUNCS:
            for a in node.args:
                walk(a.value)
        elif isinstance(node, cst.Name | cst.Attribute | cst.Subscript | cst.Call):
            out.append(node)

    walk(expr)
    return out


def _numeric(code: str, values: dict[str, int]) -> int | None:
    """Evaluate an integer formula whose leaves were renamed to the keys of `values`.

    A small arithmetic interpreter, not `eval`: the formula comes from untrusted candidate code, so only
    numbers, the renamed leaves, + - * / // % and bounded powers, and a few integer functions are understood.
    """
    try:
        result = _arith(ast.parse(code, mode="eval").body, values)
    except (ArithmeticError, TypeError, NameError, ValueError, SyntaxError, RecursionError):
        return None
    return int(result) if isinstance(result, int | float | bool) else None


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}
_CALLS: dict[str, Callable[..., Any]] = {
    "math.floor": math.floor,
    "math.ceil": math.ceil,
    "triton.cdiv": lambda a, b: -(-a // b),
    "int": int,
    "max": max,
    "min": min,
    "abs": abs,
}
_LIMIT = 1 << 62  # sizes are far below this; anything larger is not a shape formula


def _arith(node: ast.expr, values: dict[str, int]) -> Any:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        result = node.value
    elif isinstance(node, ast.Name):
        result = values[node.id]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _arith(node.operand, values)
        result = -operand if isinstance(node.op, ast.USub) else operand
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        base, exponent = _arith(node.left, values), _arith(node.right, values)
        if abs(exponent) > 64:
            raise ValueError("exponent too large")
        result = base**exponent
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        result = _BINARY[type(node.op)](_arith(node.left, values), _arith(node.right, values))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        # PyTorch's ceil-mode correction subtracts a comparison: True counts as 1.
        result = int(
            _COMPARE[type(node.ops[0])](_arith(node.left, values), _arith(node.comparators[0], values))
        )
    elif isinstance(node, ast.Call) and not node.keywords and ast.unparse(node.func) in _CALLS:
        result = _CALLS[ast.unparse(node.func)](*(_arith(a, values) for a in node.args))
    else:
        raise ValueError(f"not an integer formula: {ast.unparse(node)}")
    if abs(result) > _LIMIT:
        raise ValueError("out of range")
    return result


class _Leaves(ast.NodeTransformer):
    """Rename every maximal operand to a variable, keyed by its source text."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def _leaf(self, node: ast.expr) -> ast.expr:
        code = ast.unparse(node)
        return ast.Name(self.names.setdefault(code, f"v{len(self.names)}"), ast.Load())

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self._leaf(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        return self._leaf(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        return self._leaf(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if ast.unparse(node.func) in _FUNCS:
            node.args = [self.visit(a) for a in node.args]
            return node
        return self._leaf(node)


def _equivalent(a: str, b: str, known: dict[str, int]) -> bool:
    """Same integer on random conv geometries (names with known values fixed)."""
    names: dict[str, str] = {}
    try:
        ta = ast.unparse(_Leaves(names).visit(ast.parse(a, mode="eval")))
        tb = ast.unparse(_Leaves(names).visit(ast.parse(b, mode="eval")))
    except SyntaxError:
        return False
    rng = random.Random(0)
    agree = 0
    for _ in range(40):
        values: dict[str, int] = {}
        for code, var in names.items():
            if code in known:
                values[var] = known[code]
                continue
            role = _role(code)
            values[var] = {
                "k": rng.randint(1, 5),
                "s": rng.randint(1, 3),
                "p": rng.randint(0, 2),
                "d": rng.randint(1, 3),
            }.get(role, rng.randint(6, 40))
        va, vb = _numeric(ta, values), _numeric(tb, values)
        if va is None or vb is None:
            continue
        if va != vb:
            return False
        agree += 1
    return agree > 0


def _known_locals(fn: cst.FunctionDef) -> dict[str, int]:
    """Names a function binds to integer literals (`stride, pad = 2, 1`, `ks = 3`)."""
    out: dict[str, int] = {}
    for stmt in m.findall(fn.body, m.Assign()):
        assert isinstance(stmt, cst.Assign)
        if len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0].target, stmt.value
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
        if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple):
            if len(target.elements) == len(value.elements):
                pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements, strict=True)]
        else:
            pairs = [(target, value)]
        for t, v in pairs:
            if isinstance(t, cst.Name) and isinstance(v, cst.Integer):
                out[t.value] = int(v.value.replace("_", ""))
    return out


def _scope_names(module: cst.Module, fn: cst.FunctionDef) -> dict[str, list[str]]:
    """Wrapper expressions by role: locals, launch keywords, then `self.<attr>` set in __init__."""
    found: dict[str, list[str]] = {}

    def add(role: str, code: str) -> None:
        if role != "h" and code not in found.setdefault(role, []):
            found[role].append(code)

    for targets, value in _assignments(fn.body):
        if "stride(" in _render(value):
            continue
        for t in sorted(targets):
            add(_role(t), t)
    for call in _launches(fn):
        for a in call.args:
            if a.keyword is not None and "stride(" not in _render(a.value):
                role = _role(a.keyword.value)
                if role in ("p", "s", "d") or role == "k":
                    add(role, _render(a.value))
    for attr in m.findall(
        module, m.Assign(targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self")))])
    ):
        assert isinstance(attr, cst.Assign)
        target = attr.targets[0].target
        assert isinstance(target, cst.Attribute)
        add(_role(target.attr.value), f"self.{target.attr.value}")
    return found


@dataclass
class _SizeSite:
    node: cst.BaseExpression
    h: str
    k: str
    s: str | None  # the divisor the formula uses


def _size_sites(fn: cst.FunctionDef, tree: _Tree) -> list[_SizeSite]:
    sites: list[_SizeSite] = []
    for node in m.findall(fn.body, m.BinaryOperation()):
        assert isinstance(node, cst.BinaryOperation)
        if isinstance(tree.parent(node), cst.BinaryOperation | cst.UnaryOperation):
            continue
        if not isinstance(node.operator, cst.Add | cst.Subtract | cst.FloorDivide):
            continue
        leaves = _leaves(node)
        roles = [(_role(_render(leaf)), _render(leaf)) for leaf in leaves]
        hs = {code for role, code in roles if role == "h"}
        ks = [code for role, code in roles if role == "k"]
        if len(hs) != 1 or not ks or "out" in next(iter(hs)).lower():
            continue
        if any(isinstance(leaf, cst.Call) for leaf in leaves):
            continue
        divisors = [
            d
            for d in m.findall(node, m.BinaryOperation(operator=m.FloorDivide()))
            if isinstance(d, cst.BinaryOperation)
        ]
        stride = _render(divisors[0].right) if divisors else None
        sites.append(_SizeSite(node, next(iter(hs)), ks[0], stride))
    return sites


def _size_formula(h: str, k: str, s: str, p: str, d: str, ceil: bool, correct: bool) -> str:
    pad = "" if p == "0" else f" + 2 * {_atom(p)}"
    span = f" - {_atom(k)}" if d == "1" else f" - {_atom(d)} * ({k} - 1) - 1"
    numerator = f"{h}{pad}{span}"
    if s == "1" and not ceil:
        return f"{h}{pad} - {_atom(k)} + 1" if d == "1" else f"{h}{pad} - {_atom(d)} * ({k} - 1)"
    if ceil:
        numerator += f" + {_atom(s)} - 1"
    size = f"({numerator}) // {_atom(s)} + 1"
    if ceil and correct:
        # PyTorch drops a last window that would start in the right padding.
        limit = h if p == "0" else f"{h} + {_atom(p)}"
        size += f" - (({numerator}) // {_atom(s)} * {_atom(s)} >= {limit})"
    return size


def _conv_out_size(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Every output-size formula of a wrapper follows PyTorch's, twins (H/W) together."""
    tree = _tree(source)
    if tree is None:
        return []
    spec = _reference_spec(context)
    out: list[Rewrite] = []
    for fn in _functions(tree.module):
        sites = _size_sites(fn, tree)
        if not sites:
            continue
        scope = _scope_names(tree.module, fn)
        known = _known_locals(fn)
        # ceil_mode is the reference's choice: without one, PyTorch's default (floor) holds.
        ceil_modes = [bool(spec.get("ceil_mode"))] if spec is not None else [False]
        emitted: list[list[str]] = []
        for ceil in ceil_modes:
            for prefer_literal in (False, True):
                for correct in (False, True) if ceil else (False,):
                    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
                    texts: list[str] = []
                    for dim, site in enumerate(sites):
                        terms = {"k": site.k, "s": site.s}
                        codes = [_render(leaf) for leaf in _leaves(site.node)]
                        for role in ("p", "d", "s"):
                            mine = [c for c in codes if _role(c) == role]
                            if role == "s" and site.s is not None:
                                continue
                            literal = None
                            if spec is not None:
                                key = {"p": "padding", "d": "dilation", "s": "stride"}[role]
                                value = spec.get(key, dim if spec.dims > 1 else 0)
                                literal = str(value) if isinstance(value, int) else None
                            named = _pick(scope.get(role, []), site.h)
                            choice = (literal or named) if prefer_literal else (named or literal)
                            if mine:  # a term the formula already names stays
                                choice = mine[0]
                            default = {
                                "p": "0",
                                "d": "1",
                                "s": site.k if spec and spec.kind != "conv" else "1",
                            }
                            terms[role] = choice or default[role]
                        new = _size_formula(
                            site.h,
                            site.k,
                            terms["s"] or "1",
                            terms["p"] or "0",
                            terms["d"] or "1",
                            ceil,
                            correct,
                        )
                        texts.append(new)
                        exact = _size_formula(
                            site.h,
                            site.k,
                            terms["s"] or "1",
                            terms["p"] or "0",
                            terms["d"] or "1",
                            ceil,
                            True,
                        )
                        if ceil and _equivalent(_render(site.node), exact, known):
                            continue
                        if not _equivalent(_render(site.node), new, known):
                            mapping[site.node] = _expr(new)
                    same = any(
                        all(_equivalent(a, b, known) for a, b in zip(texts, prior, strict=True))
                        for prior in emitted
                    )
                    if not mapping or same:
                        continue
                    emitted.append(texts)
                    new_module = _apply(tree, replace=mapping)
                    first = min(mapping, key=tree.line)
                    lines = ", ".join(_render(v) for v in mapping.values())
                    what = f"{fn.name.value}: output size {lines}"
                    out.append(_rewrite("conv_out_size", new_module, tree.line(first), what))
    return out


def _pick(candidates: list[str], size: str) -> str | None:
    """The candidate for the same axis as `size` (PAD_H for H), else the first."""
    letter = _dim_letter(size)
    for c in candidates:
        if letter and _dim_letter(c) == letter:
            return c
    plain = [c for c in candidates if not _dim_letter(c)]
    return plain[0] if plain else candidates[0] if candidates else None


# ---------------------------------------------------------------- kernel-side geometry


@dataclass
class _KernelParams:
    """A kernel's geometry parameters by role; memory strides are left out."""

    by_role: dict[str, list[str]]
    used: set[str]  # names read anywhere in the body

    def of(self, role: str, target: str) -> str | None:
        return _pick(self.by_role.get(role, []), target)


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


def _kernel_params(module: cst.Module, fn: cst.FunctionDef) -> _KernelParams:
    launched = _launch_args(module, fn)
    constexpr = _constexpr_params(fn)
    by_role: dict[str, list[str]] = {}
    for p in _params(fn):
        name = p.name.value
        low = name.lower()
        if "ptr" in low or "block" in low:
            continue
        role = _role(name)
        if role == "s":
            memory = "stride(" in launched.get(name, "") or (
                name not in constexpr and re.fullmatch(r"(stride_?\w+|\w+_stride)", low) is not None
            )
            if memory and not name.isupper():
                continue
        if role != "h":
            by_role.setdefault(role, []).append(name)
    used: set[str] = set()
    for stmt in fn.body.body:
        used |= _names(stmt)
    return _KernelParams(by_role, used)


@dataclass
class _Term:
    sign: str  # "+" or "-"
    node: cst.BaseExpression
    kind: str  # plain, s, d, k (a product with that parameter), p (the padding alone), other
    factor: cst.BaseExpression | None = None  # the other operand of a product


def _chain(expr: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """Signed terms of an unparenthesised + / - chain."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add | cst.Subtract):
        if not expr.lpar:
            sign = "+" if isinstance(expr.operator, cst.Add) else "-"
            return [*_chain(expr.left), (sign, expr.right)]
    return [("+", expr)]


def _is_plain(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Name):
        return True
    return isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)


def _terms(expr: cst.BaseExpression, roles: dict[str, str]) -> list[_Term]:
    out: list[_Term] = []
    for sign, node in _chain(expr):
        kind, factor = "other", None
        if _is_plain(node):
            kind = "plain"
            if isinstance(node, cst.Name) and roles.get(node.value) == "p":
                kind = "p"
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            for param, other in ((node.right, node.left), (node.left, node.right)):
                if isinstance(param, cst.Name) and roles.get(param.value) in ("s", "d", "k"):
                    kind, factor = roles[param.value], other
                    break
        out.append(_Term(sign if out else "", node, kind, factor))
    return out


def _join(terms: list[tuple[str, str]]) -> str:
    text = ""
    for i, (sign, code) in enumerate(terms):
        text += code if i == 0 and sign in ("", "+") else f" {sign or '+'} {code}" if i else f"-{code}"
    return text


@dataclass
class _Coord:
    stmt: cst.Assign
    target: str
    terms: list[_Term]


def _coordinates(fn: cst.FunctionDef, params: _KernelParams) -> list[_Coord]:
    """Assignments that compute an input coordinate from an output position and a tap."""
    roles = {name: role for role, names in params.by_role.items() for name in names}
    compared = {
        n
        for cmp in m.findall(fn.body, m.Comparison())
        if isinstance(cmp, cst.Comparison)
        for n in _names(cmp)
    }
    out: list[_Coord] = []
    for stmt in m.findall(fn.body, m.Assign()):
        assert isinstance(stmt, cst.Assign)
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0].target, cst.Name):
            continue
        target = stmt.targets[0].target.value
        terms = _terms(stmt.value, roles)
        kinds = [t.kind for t in terms]
        if len(terms) < 2 or not set(kinds) & {"s", "d", "k", "p"}:
            continue
        if "k" in kinds and not any(
            t.kind == "k" and t.factor is not None and _is_plain(t.factor) for t in terms
        ):
            continue
        if not (set(kinds) & {"p", "d"} or target in compared):
            continue
        out.append(_Coord(stmt, target, terms))
    return out


def _coord_fixes(coord: _Coord, params: _KernelParams, siblings: list[_Coord]) -> list[tuple[str, int, str]]:
    """(fix kind, plain-term ordinal, new right-hand side) for one coordinate assignment."""
    kinds = [t.kind for t in coord.terms]
    others = [c for c in siblings if c is not coord]

    def missing(role: str) -> str | None:
        """The parameter of `role` this coordinate should use but does not."""
        name = params.of(role, coord.target)
        if name is None or role in kinds:
            return None
        if name not in params.used or any(role in [t.kind for t in c.terms] for c in others):
            return name
        return None

    rendered = [(t.sign, _render(t.node)) for t in coord.terms]
    plain = [i for i, t in enumerate(coord.terms) if t.kind == "plain"]
    fixes: list[tuple[str, int, str]] = []
    pad = missing("p")
    if pad is not None:
        at = kinds.index("s") + 1 if "s" in kinds else 1
        fixes.append(("pad", 0, _join([*rendered[:at], ("-", pad), *rendered[at:]])))
    dil = missing("d")
    if dil is not None:
        taps = [i for i in plain if "s" in kinds or "k" in kinds] or plain
        for ordinal, i in enumerate(taps):
            new = list(rendered)
            new[i] = (rendered[i][0], f"{rendered[i][1]} * {dil}")
            fixes.append(("dilation", ordinal, _join(new)))
    stride = missing("s")
    if stride is not None:
        for i, t in enumerate(coord.terms):
            if t.kind == "k" and t.factor is not None and _is_plain(t.factor):
                new = list(rendered)
                new[i] = (rendered[i][0], f"{_render(t.factor)} * {stride}")
                fixes.append(("window_step", 0, _join(new)))
        if "k" not in kinds:
            starts = [i for i in plain if "d" in kinds] or plain
            for ordinal, i in enumerate(starts):
                new = list(rendered)
                new[i] = (rendered[i][0], f"{rendered[i][1]} * {stride}")
                fixes.append(("stride", ordinal, _join(new)))
    for i, t in enumerate(coord.terms):
        if t.kind == "p" and t.sign in ("+", "") and i > 0 and set(kinds) & {"s", "d"}:
            new = list(rendered)
            new[i] = ("-", rendered[i][1])
            fixes.append(("pad_sign", 0, _join(new)))
    return fixes


def _conv_input_coords(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Input coordinate = out * STRIDE - PAD + tap * DIL, on every twin (ih, iw) at once."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        params = _kernel_params(tree.module, fn)
        coords = _coordinates(fn, params)
        groups: dict[tuple[str, ...], list[_Coord]] = {}
        for c in coords:
            groups.setdefault(tuple(sorted(t.kind for t in c.terms)), []).append(c)
        for group in groups.values():
            options: dict[tuple[str, int], dict[cst.CSTNode, cst.CSTNode]] = {}
            for c in group:
                for kind, ordinal, rhs in _coord_fixes(c, params, coords):
                    options.setdefault((kind, ordinal), {})[c.stmt.value] = _expr(rhs)
            for (kind, _), mapping in options.items():
                first = min(mapping, key=tree.line)
                lines = "; ".join(_render(v) for v in mapping.values())
                what = f"{fn.name.value}: input coordinate ({kind}) {lines}"
                out.append(_rewrite("conv_input_coords", _apply(tree, mapping), tree.line(first), what))
    return out


# ---------------------------------------------------------------- pad_upper_bound


def _bounds(expr: cst.CSTNode) -> tuple[dict[str, cst.Comparison], dict[str, cst.Comparison]]:
    """Names with a `x >= 0` lower bound and names with an `x < n` upper bound in a mask."""
    lower: dict[str, cst.Comparison] = {}
    upper: dict[str, cst.Comparison] = {}
    for cmp in m.findall(expr, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        if len(cmp.comparisons) != 1:
            continue
        op, right, left = cmp.comparisons[0].operator, cmp.comparisons[0].comparator, cmp.left
        if isinstance(left, cst.Name):
            if isinstance(op, cst.GreaterThanEqual) and _is_number(right, 0):
                lower[left.value] = cmp
            elif isinstance(op, cst.GreaterThan) and _is_number(right, -1):
                lower[left.value] = cmp
            elif isinstance(op, cst.LessThan | cst.LessThanEqual):
                upper[left.value] = cmp
        if isinstance(right, cst.Name) and isinstance(op, cst.LessThanEqual) and _is_number(left, 0):
            lower[right.value] = cmp
    return lower, upper


def _and(tree: _Tree, cmp: cst.Comparison, extra: str) -> cst.BaseExpression:
    parent = tree.parent(cmp)
    text = f"{_render(cmp)} & ({extra})" if cmp.lpar else f"({_render(cmp)}) & ({extra})"
    inline = isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.BitAnd)
    return _expr(text if inline or isinstance(parent, cst.Assign | cst.Arg) else f"({text})")


def _pad_upper_bound(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """A padding mask bounds the coordinate on both sides: `x >= 0` needs its `x < size`."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        constexpr = _constexpr_params(fn)
        sizes = [
            p.name.value
            for p in _params(fn)
            if p.name.value not in constexpr
            and not re.search(r"ptr|stride|^s[a-z]{2,3}$", p.name.value.lower())
            and p.annotation is None
        ]
        pointers = set()
        for access in _calls(fn.body, "tl.load", "tl.store"):
            address = _arg(access, "pointer", 0)
            if address is not None:
                pointers |= {_render(n) for _, n in _chain(address.value) if isinstance(n, cst.Name)}
        sizes = [s for s in sizes if s not in pointers]
        compared: list[str] = []
        for cmp in m.findall(fn.body, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            for target in cmp.comparisons:
                if isinstance(target.comparator, cst.Name) and target.comparator.value in sizes:
                    if target.comparator.value not in compared:
                        compared.append(target.comparator.value)
        mask_names = set(_mask_names(fn))
        masks = [
            v
            for targets, v in _assignments(fn.body)
            if targets & mask_names or any("mask" in t.lower() for t in targets)
        ]
        for call in _calls(fn.body, "tl.load"):
            arg = _arg(call, "mask", 1)
            if arg is not None and not isinstance(arg.value, cst.Name):
                masks.append(arg.value)
        for mask in masks:
            lower, upper = _bounds(mask)
            todo = [name for name in lower if name not in upper]
            if not todo:
                continue
            ranked: dict[str, list[str]] = {}
            for name in todo:
                letter = _dim_letter(name)
                same = [s for s in compared + sizes if letter and _dim_letter(s) == letter]
                order = list(dict.fromkeys(same + compared + sizes))
                # an input coordinate is bounded by an input size, not an output one
                order.sort(
                    key=lambda s: (
                        "out" in s.lower() or re.fullmatch(r"O[A-Z]\w*", s) is not None,
                        re.fullmatch(r"(c|n_?c|num_c|ch)(h|hannels?)?(_\w+)?", s.lower()) is not None,
                    )
                )
                ranked[name] = order[:3]
            choices = [{name: ranked[name][0] for name in todo if ranked[name]}]
            for name in todo:
                choices += [{name: size} for size in ranked[name]]
            seen: set[str] = set()
            for choice in choices:
                if not choice:
                    continue
                mapping: dict[cst.CSTNode, cst.CSTNode] = {
                    lower[name]: _and(tree, lower[name], f"{name} < {size}") for name, size in choice.items()
                }
                new = _apply(tree, mapping).code
                if new in seen:
                    continue
                seen.add(new)
                bounds = ", ".join(f"{n} < {s}" for n, s in choice.items())
                what = f"{fn.name.value}: padding mask gets its upper bound {bounds}"
                out.append(
                    Rewrite("pad_upper_bound", f"{what} (line {tree.line(mask)})", new, tree.line(mask))
                )
    return out


# ---------------------------------------------------------------- avg_pool_valid_count


def _window_area(expr: cst.BaseExpression, kernel_sizes: set[str]) -> bool:
    """A product of kernel-size parameters and integers (the window area)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _window_area(expr.left, kernel_sizes) and _window_area(expr.right, kernel_sizes)
    if isinstance(expr, cst.Name):
        return expr.value in kernel_sizes
    return isinstance(expr, cst.Integer)


def _fresh(fn: cst.FunctionDef, base: str) -> str:
    used = set().union(*(_names(s) for s in fn.body.body))
    name, i = base, 1
    while name in used:
        name, i = f"{base}{i}", i + 1
    return name


def _avg_pool_valid_count(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """count_include_pad=False: divide each window sum by its taps inside the input, not the window area."""
    spec = _reference_spec(context)
    if spec is not None and (spec.kind != "avg" or spec.get("count_include_pad") is not False):
        return []
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        kernel_sizes = {p.name.value for p in _params(fn) if _role(p.name.value) == "k"}
        inits: dict[str, cst.Assign] = {}
        accumulates: dict[str, list[cst.AugAssign]] = {}
        loads: dict[str, cst.Call] = {}
        for node in m.findall(fn.body, m.Assign() | m.AugAssign()):
            if (
                isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)
            ):
                name = node.targets[0].target.value
                inits.setdefault(name, node)
                found = _calls(node.value, "tl.load")
                if found:
                    loads[name] = found[0]
            elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
                accumulates.setdefault(node.target.value, []).append(node)
        for div in m.findall(fn.body, m.BinaryOperation(operator=m.Divide())):
            assert isinstance(div, cst.BinaryOperation)
            divisor = div.right.with_changes(lpar=[], rpar=[])
            if not _window_area(divisor, kernel_sizes) or isinstance(divisor, cst.Integer):
                continue
            numerator = div.left
            replace: dict[cst.CSTNode, cst.CSTNode] = {}
            after: dict[cst.CSTNode, list[str]] = {}
            if isinstance(numerator, cst.Name) and numerator.value in accumulates:
                acc = numerator.value
                init = inits.get(acc)
                steps = accumulates[acc]
                load = next(iter(_calls(steps[0].value, "tl.load")), None)
                if load is None and isinstance(steps[0].value, cst.Name):
                    load = loads.get(steps[0].value.value)
                mask = _arg(load, "mask", 1) if load is not None else None
                if init is None or mask is None:
                    continue
                count = _fresh(fn, "count")
                after[_statement(tree, init) or init] = [f"{count} = {_render(init.value)}"]
                after[_statement(tree, steps[0]) or steps[0]] = [
                    f"{count} += {_atom(_render(mask.value))}.to(tl.float32)"
                ]
                replace[div.right] = _expr(f"tl.maximum({count}, 1.0)")
            else:
                total = numerator
                if isinstance(numerator, cst.Name) and numerator.value in inits:
                    total = inits[numerator.value].value
                sums = _calls(total, "tl.sum")
                if not sums:
                    continue
                summed = _arg(sums[0], "input", 0)
                axis = _arg(sums[0], "axis", 1)
                if (
                    summed is None
                    or not isinstance(summed.value, cst.Name)
                    or summed.value.value not in loads
                ):
                    continue
                mask = _arg(loads[summed.value.value], "mask", 1)
                if mask is None:
                    continue
                axis_text = f", axis={_render(axis.value)}" if axis is not None else ""
                counted = f"tl.sum({_atom(_render(mask.value))}.to(tl.float32){axis_text})"
                replace[div.right] = _expr(f"tl.maximum({counted}, 1.0)")
            what = f"{fn.name.value}: average over the taps inside the input (count_include_pad=False)"
            out.append(_rewrite("avg_pool_valid_count", _apply(tree, replace, after), tree.line(div), what))
    return out


# ---------------------------------------------------------------- bias_never_added


def _bias_params(module: cst.Module, fn: cst.FunctionDef) -> list[str]:
    launched = _launch_args(module, fn)
    out = []
    for p in _params(fn):
        name = p.name.value
        if "bias" in name.lower() or "bias" in launched.get(name, "").lower():
            out.append(name)
    return out


_CHANNEL = re.compile(
    r"^(o|out_?)?c(h|hannel)?(_?out|o)?(_?(idx|id|offs?|index))?$|^(oc|co|cout|c_out|offs_n|rn|cols?)\w*$"
)


def _bias_never_added(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """A bias the kernel receives but never reads is added to the result before the store."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        used = set().union(*(_names(s) for s in fn.body.body))
        unread = [b for b in _bias_params(tree.module, fn) if b not in used]
        stores = _calls(fn.body, "tl.store")
        if not unread or not stores:
            continue
        store = stores[-1]
        value = _arg(store, "value", 1)
        if value is None:
            continue
        values = _assignments(fn.body)
        names = [t for targets, _ in values for t in sorted(targets)]
        channels = [n for n in dict.fromkeys(names) if _CHANNEL.match(n.lower()) and "mask" not in n.lower()]
        tensors = {t for targets, v in values if _calls(v, "tl.arange") for t in targets}
        masks: dict[str, str] = {}
        for targets, v in values:
            for cmp in m.findall(v, m.Comparison()):
                assert isinstance(cmp, cst.Comparison)
                if isinstance(cmp.left, cst.Name) and len(targets) == 1:
                    masks.setdefault(cmp.left.value, next(iter(targets)))
        slices: dict[str, list[str]] = {}
        for sub in m.findall(fn.body, m.Subscript(value=m.Name())):
            assert isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name)
            text = _render(sub)[len(sub.value.value) :]
            if "None" in text:
                slices.setdefault(sub.value.value, [])
                if text not in slices[sub.value.value]:
                    slices[sub.value.value].append(text)
        stmt = _statement(tree, store)
        if stmt is None:
            continue
        for bias in unread:
            for channel in channels:
                load = f"tl.load({bias} + {channel}"
                load += f", mask={masks[channel]}, other=0.0)" if channel in masks else ")"
                shapes = slices.get(channel, []) + [""] if channel in tensors else [""]
                for shape in shapes:
                    term = f"{load}{shape}"
                    if isinstance(value.value, cst.Name):
                        name = value.value.value
                        new = _insert_before(tree, stmt, f"{name} += {term}")
                    else:
                        new = _apply(
                            tree, replace={value.value: _expr(f"{_atom(_render(value.value))} + {term}")}
                        )
                    what = f"{fn.name.value}: add {term} before the store"
                    out.append(_rewrite("bias_never_added", new, tree.line(stmt), what))
    return out


def _insert_before(tree: _Tree, stmt: cst.CSTNode, code: str) -> cst.Module:
    block = tree.parent(stmt)
    assert isinstance(block, cst.IndentedBlock)
    at = next(i for i, s in enumerate(block.body) if s is stmt)
    body = [*block.body[:at], cst.parse_statement(code + "\n"), *block.body[at:]]
    return tree.replace(block, block.with_changes(body=body))


# ---------------------------------------------------------------- store_batch_index


def _store_batch_index(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """The output offset uses the combined (batch, channel) id, not the channel alone."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        pids = _program_id_names(fn)
        splits: dict[str, tuple[str, str, str]] = {}  # channel -> (combined id, batch, divisor)
        quotients: dict[tuple[str, str], str] = {}
        remainders: dict[tuple[str, str], str] = {}
        for targets, value in _assignments(fn.body):
            if len(targets) != 1 or not isinstance(value, cst.BinaryOperation):
                continue
            if not (isinstance(value.left, cst.Name) and value.left.value in pids):
                continue
            key = (value.left.value, _render(value.right))
            if isinstance(value.operator, cst.FloorDivide):
                quotients[key] = next(iter(targets))
            elif isinstance(value.operator, cst.Modulo):
                remainders[key] = next(iter(targets))
        for key, channel in remainders.items():
            if key in quotients:
                splits[channel] = (key[0], quotients[key], key[1])
        for store in _calls(fn.body, "tl.store"):
            address = _arg(store, "pointer", 0)
            if address is None:
                continue
            read = _names(address.value)
            for channel, (combined, batch, divisor) in splits.items():
                if channel not in read or batch in read or combined in read:
                    continue
                sites = [n for n in m.findall(address.value, m.Name(channel)) if isinstance(n, cst.Name)]
                for replacement in (combined, f"({batch} * {_atom(divisor)} + {channel})"):
                    new = _apply(tree, {n: _expr(replacement) for n in sites})
                    what = f"{fn.name.value}: the store offset indexes the batch ({channel} -> {replacement})"
                    out.append(_rewrite("store_batch_index", new, tree.line(store), what))
    return out


# ---------------------------------------------------------------- launch_strides_from_shape


def _product(expr: cst.BaseExpression) -> list[str] | None:
    """Factor names of a product of names (`C * H * W` -> [C, H, W]); None if not one."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply) and not expr.lpar:
        left, right = _product(expr.left), _product(expr.right)
        return left + right if left is not None and right is not None else None
    return None


def _shape_owners(fn: cst.FunctionDef) -> dict[str, tuple[str, int, int]]:
    """Size name -> (tensor, axis, ndim) from `N, C, H, W = x.shape` and `H = x.shape[2]`."""
    out: dict[str, tuple[str, int, int]] = {}
    for stmt in m.findall(fn.body, m.Assign()):
        assert isinstance(stmt, cst.Assign)
        value = stmt.value
        if len(stmt.targets) != 1:
            continue
        target = stmt.targets[0].target
        call = value.func if isinstance(value, cst.Call) else None
        if (
            isinstance(value, cst.Attribute)
            and value.attr.value == "shape"
            and isinstance(value.value, cst.Name)
        ):
            tensor = value.value.value
        elif (
            isinstance(call, cst.Attribute) and call.attr.value == "size" and isinstance(call.value, cst.Name)
        ):
            tensor = call.value.value
        else:
            continue
        if isinstance(target, cst.Tuple):
            elements = target.elements
            for axis, el in enumerate(elements):
                if isinstance(el.value, cst.Name) and el.value.value != "_":
                    out.setdefault(el.value.value, (tensor, axis, len(elements)))
    return out


def _launch_strides_from_shape(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Strides passed as products of the shape (`C*H*W, H*W, W, 1`) assume a contiguous input."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _functions(tree.module):
        owners = _shape_owners(fn)
        for call in _launches(fn):
            args = list(call.args)
            end = 0
            while end < len(args):
                if not (args[end].keyword is None and _is_number(args[end].value, 1)):
                    end += 1
                    continue
                start, suffix = end, []
                while start > 0 and args[start - 1].keyword is None:
                    factors = _product(args[start - 1].value)
                    if factors is None or len(factors) != len(suffix) + 1:
                        break
                    if any(factors.count(x) < suffix.count(x) for x in suffix):
                        break
                    suffix = factors
                    start -= 1
                run = end - start + 1
                tensors = {owners[n][0] for n in suffix if n in owners}
                if run >= 2 and len(tensors) == 1:
                    tensor = next(iter(tensors))
                    ndim = owners[suffix[0]][2]
                    first = ndim - run
                    mapping: dict[cst.CSTNode, cst.CSTNode] = {
                        args[start + i].value: _expr(f"{tensor}.stride({first + i})") for i in range(run)
                    }
                    what = f"{fn.name.value}: pass {tensor}'s strides, not the contiguous ones"
                    out.append(
                        _rewrite(
                            "launch_strides_from_shape", _apply(tree, mapping), tree.line(args[start]), what
                        )
                    )
                end += 1
    return out


# ---------------------------------------------------------------- registry


def _guarded(fn: RuleFn) -> RuleFn:
    """A rule that meets code it cannot read proposes nothing rather than stopping the repair loop."""

    def apply(source: str, context: RuleContext | None = None) -> list[Rewrite]:
        try:
            return fn(source, context)
        except (AssertionError, AttributeError, IndexError, KeyError, TypeError, ValueError, RecursionError):
            return []
        except cst.ParserSyntaxError:
            return []

    apply.__name__ = fn.__name__
    return apply


RULES: tuple[Rule, ...] = (
    Rule(
        "conv_out_size",
        "conv/pool output size as PyTorch computes it (padding, dilation, stride, ceil_mode), all axes",
        "operator_misread",
        ("shape_mismatch", "shape"),
        _guarded(_conv_out_size),
    ),
    Rule(
        "conv_input_coords",
        "input coordinate out * stride - padding + tap * dilation, all axes at once",
        "operator_misread",
        ("everywhere", "shifted", "periodic", "leading", "trailing", "scattered"),
        _guarded(_conv_input_coords),
    ),
    Rule(
        "pad_upper_bound",
        "padding mask bounds the input coordinate on the right/bottom too",
        "tail_mask",
        ("trailing", "tail_block", "columns", "rows", "scattered", "garbage_region"),
        _guarded(_pad_upper_bound),
    ),
    Rule(
        "avg_pool_valid_count",
        "count_include_pad=False: average over the taps inside the input",
        "operator_misread",
        ("leading", "trailing", "constant_ratio", "rows", "columns", "periodic"),
        _guarded(_avg_pool_valid_count),
    ),
    Rule(
        "bias_never_added",
        "add the bias the kernel receives but never reads",
        "operator_misread",
        ("everywhere", "constant_offset", "columns", "rows", "periodic"),
        _guarded(_bias_never_added),
    ),
    Rule(
        "store_batch_index",
        "output offset indexes the batch (combined batch*channel program id)",
        "strides_layout",
        ("untouched_region", "zero_region", "garbage_region", "rows", "leading", "trailing"),
        _guarded(_store_batch_index),
    ),
    Rule(
        "launch_strides_from_shape",
        "launch passes the input's strides, not ones derived from its shape",
        "strides_layout",
        ("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered"),
        _guarded(_launch_strides_from_shape),
    ),
)
