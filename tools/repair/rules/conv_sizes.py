"""Output sizes of conv/pool wrappers as PyTorch computes them, twins (H/W) together."""

from __future__ import annotations

import ast
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _assignments,
    _dotted,
    _expr,
    _launches,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.conv_spec import (
    _apply,
    _atom,
    _functions,
    _pick,
    _reference_spec,
    _role,
)
from kernel_medic.tools.repair.rules.cst_find import findall

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
    for stmt in findall(fn.body, m.Assign()):
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
    for attr in findall(
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


def _size_sites(fn: cst.FunctionDef, tree: Tree) -> list[_SizeSite]:
    sites: list[_SizeSite] = []
    for node in findall(fn.body, m.BinaryOperation()):
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
            for d in findall(node, m.BinaryOperation(operator=m.FloorDivide()))
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


@rule(
    "conv_out_size",
    title="conv/pool output size as PyTorch computes it (padding, dilation, stride, ceil_mode), all axes",
    bug_class="operator_misread",
    symptoms=("shape_mismatch", "shape"),
    per="module",
    guarded=True,
)
def conv_out_size(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Every output-size formula of a wrapper follows PyTorch's, twins (H/W) together."""
    spec = _reference_spec(context)
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
                    yield Edit(new_module, tree.line(first), what)


RULES = rules_of(__name__)
