"""Evaluating a Triton expression in float32 on fixed sample points, so formulas can be compared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst
import libcst.matchers as m
import torch
from kernel_medic.tools.repair.rules.base import (
    Tree,
    _dotted,
    _params,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.rules.formula_reference import (
    _Unsupported,
)

# ---------------------------------------------------------------- numeric check of a Triton expression


_SAMPLE_SIZE = 192


def _samples(domain: str, index: int) -> torch.Tensor:
    """Fixed float32 sample points: moderate values, the origin's neighbourhood, and large magnitudes."""
    gen = torch.Generator().manual_seed(17 + index)
    if domain == "unit":
        base = torch.rand(_SAMPLE_SIZE - 4, generator=gen)
        return torch.cat([torch.tensor([0.0, 1.0, 0.5, 1e-3]), base])
    if domain == "sign":
        return torch.where(torch.rand(_SAMPLE_SIZE, generator=gen) < 0.5, -1.0, 1.0)
    spread = torch.randn(_SAMPLE_SIZE - 40, generator=gen) * 3.0
    special = torch.tensor(
        [0.0, 1e-3, -1e-3, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 6.0, -6.0, 10.0, -10.0]
    )
    large = torch.tensor([15.0, -15.0, 25.0, -25.0, 40.0, -40.0, 100.0, -100.0, 0.25, -0.25])
    return torch.cat([special, large, spread, torch.linspace(-8.0, 8.0, 15)])[
        torch.randperm(_SAMPLE_SIZE, generator=gen)
    ]


def _close(a: Any, b: Any) -> bool:
    a = torch.as_tensor(a, dtype=torch.float32).expand(_SAMPLE_SIZE)
    b = torch.as_tensor(b, dtype=torch.float32).expand(_SAMPLE_SIZE)
    return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-5, equal_nan=True))


def _t(value: Any) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=torch.float32)


def _where(c: Any, a: Any, b: Any) -> torch.Tensor:
    return torch.where(_t(c).bool(), _t(a).float(), _t(b).float())


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sigmoid": lambda a: torch.sigmoid(_t(a)),
    "exp": lambda a: torch.exp(_t(a)),
    "exp2": lambda a: torch.exp2(_t(a)),
    "log": lambda a: torch.log(_t(a)),
    "log2": lambda a: torch.log2(_t(a)),
    "log1p": lambda a: torch.log1p(_t(a)),
    "expm1": lambda a: torch.expm1(_t(a)),
    "abs": lambda a: torch.abs(_t(a)),
    "fabs": lambda a: torch.abs(_t(a)),
    "sqrt": lambda a: torch.sqrt(_t(a)),
    "sqrt_rn": lambda a: torch.sqrt(_t(a)),
    "rsqrt": lambda a: torch.rsqrt(_t(a)),
    "erf": lambda a: torch.erf(_t(a)),
    "tanh": lambda a: torch.tanh(_t(a)),
    "cos": lambda a: torch.cos(_t(a)),
    "sin": lambda a: torch.sin(_t(a)),
    "floor": lambda a: torch.floor(_t(a)),
    "ceil": lambda a: torch.ceil(_t(a)),
    "maximum": lambda a, b: torch.maximum(_t(a), _t(b)),
    "minimum": lambda a, b: torch.minimum(_t(a), _t(b)),
    "fmax": lambda a, b: torch.fmax(_t(a), _t(b)),
    "fmin": lambda a, b: torch.fmin(_t(a), _t(b)),
    "pow": lambda a, b: torch.pow(_t(a), _t(b)),
    "fdiv": lambda a, b: _t(a) / _t(b),
    "div_rn": lambda a, b: _t(a) / _t(b),
    "fma": lambda a, b, c: _t(a) * _t(b) + _t(c),
    "where": _where,
    "clamp": lambda a, lo, hi: torch.minimum(torch.maximum(_t(a), _t(lo)), _t(hi)),
}
_FUNCTION_ROOTS = {"tl", "triton", "libdevice", "math"}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.Divide: lambda a, b: _t(a) / _t(b),
    cst.Power: lambda a, b: _t(a) ** b,
    cst.BitAnd: lambda a, b: _t(a).bool() & _t(b).bool(),
    cst.BitOr: lambda a, b: _t(a).bool() | _t(b).bool(),
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    cst.LessThan: lambda a, b: _t(a) < _t(b),
    cst.LessThanEqual: lambda a, b: _t(a) <= _t(b),
    cst.GreaterThan: lambda a, b: _t(a) > _t(b),
    cst.GreaterThanEqual: lambda a, b: _t(a) >= _t(b),
    cst.Equal: lambda a, b: _t(a) == _t(b),
    cst.NotEqual: lambda a, b: _t(a) != _t(b),
}


class _Evaluator:
    """Evaluates a kernel's expression on samples: a name is its last assignment above the use."""

    def __init__(
        self,
        tree: Tree,
        fn: cst.FunctionDef,
        env: dict[str, Any],
        helpers: dict[str, cst.FunctionDef],
        overrides: dict[cst.CSTNode, Any] | None = None,
    ) -> None:
        self.tree, self.fn, self.env, self.helpers = tree, fn, env, helpers
        self.overrides = overrides or {}
        self.literals: list[cst.BaseExpression] = []  # numeric literals the value depends on
        self.defs: dict[str, list[tuple[int, cst.BaseExpression | None]]] = {}
        for node in findall(fn.body, m.Assign() | m.AnnAssign() | m.AugAssign()):
            targets: list[cst.BaseAssignTargetExpression] = (
                [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]  # type: ignore[union-attr]
            )
            for target in targets:
                if isinstance(target, cst.Name):
                    value = None if isinstance(node, cst.AugAssign) else node.value  # type: ignore[union-attr]
                    self.defs.setdefault(target.value, []).append((tree.line(node), value))

    def value(
        self, node: cst.BaseExpression, line: int, local: dict[str, Any] | None = None, depth: int = 0
    ) -> Any:
        if depth > 40:
            raise _Unsupported("too deep")
        if node in self.overrides:
            return self.overrides[node]
        ev = lambda n: self.value(n, line, local, depth + 1)  # noqa: E731
        if isinstance(node, cst.Integer | cst.Float):
            self.literals.append(node)
            return float(node.value.replace("_", ""))
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.expression, cst.Integer | cst.Float) and isinstance(node.operator, cst.Minus):
                self.literals.append(node)
                return -float(node.expression.value.replace("_", ""))
            if isinstance(node.operator, cst.Minus):
                return -_t(ev(node.expression))
            if isinstance(node.operator, cst.Plus):
                return ev(node.expression)
            raise _Unsupported("unary")
        if isinstance(node, cst.BinaryOperation):
            op = _BINARY.get(type(node.operator))
            if op is None:
                raise _Unsupported("binary")
            return op(ev(node.left), ev(node.right))
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            cmp = _COMPARE.get(type(node.comparisons[0].operator))
            if cmp is None:
                raise _Unsupported("comparison")
            return cmp(ev(node.left), ev(node.comparisons[0].comparator))
        if isinstance(node, cst.Name):
            return self.name(node.value, line, local, depth)
        if isinstance(node, cst.Call):
            return self.call(node, line, local, depth)
        raise _Unsupported(type(node).__name__)

    def name(self, name: str, line: int, local: dict[str, Any] | None, depth: int) -> Any:
        if local is not None:
            if name in local:
                return local[name]
            raise _Unsupported(name)
        if name in self.env:
            return self.env[name]
        earlier = [(at, value) for at, value in self.defs.get(name, []) if at < line]
        if not earlier or earlier[-1][1] is None:
            raise _Unsupported(name)
        at, value = earlier[-1]
        return self.value(value, at, None, depth + 1)  # type: ignore[arg-type]

    def call(self, node: cst.Call, line: int, local: dict[str, Any] | None, depth: int) -> Any:
        ev = lambda n: self.value(n, line, local, depth + 1)  # noqa: E731
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and node.args:
            value = ev(func.value)
            dtype = _dotted(node.args[0].value) or ""
            return torch.trunc(_t(value)) if "int" in dtype else value
        name = _dotted(func) or ""
        if isinstance(func, cst.Name) and name in self.helpers:
            return self.inline(self.helpers[name], [ev(a.value) for a in node.args if a.keyword is None])
        if name.split(".")[0] in _FUNCTION_ROOTS and name.split(".")[-1] in _FUNCTIONS:
            if any(a.keyword is not None for a in node.args):
                raise _Unsupported("keyword arguments")
            return _FUNCTIONS[name.split(".")[-1]](*(ev(a.value) for a in node.args))
        raise _Unsupported(name or "call")

    def inline(self, helper: cst.FunctionDef, args: list[Any]) -> Any:
        local = dict(zip((p.name.value for p in _params(helper)), args, strict=False))
        if not isinstance(helper.body, cst.IndentedBlock):
            raise _Unsupported("helper body")
        for stmt in helper.body.body:
            if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
                raise _Unsupported("helper statement")
            small = stmt.body[0]
            if isinstance(small, cst.Return) and small.value is not None:
                return self.value(small.value, 0, local)
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                local[small.targets[0].target.value] = self.value(small.value, 0, local)
            elif not (isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)):
                raise _Unsupported("helper statement")
        raise _Unsupported("helper without return")


RULES = rules_of(__name__)
