"""Reference-formula rules: an elementwise activation or per-element loss term as PyTorch defines it.

Generated kernels often get the skeleton right and the formula wrong: GELU's tanh approximation for the exact
erf form, Keras' hardsigmoid (0.2x + 0.5) for relu6(x + 3) / 6, Swish's beta outside the sigmoid, a
default constant (LeakyReLU slope, Smooth-L1 beta) where the model is built with another, a missing abs, an
unstable BCE.

The reference's forward is read statically into a Triton expression over its inputs (a known functional or
module call, or a plain torch expression), with constructor constants kept symbolic so the kernel's own
parameter is used where the launch passes it. In the candidate, the value a kernel stores (or sums, for
losses) is traced back to the loads of the reference's inputs. Both formulas are evaluated in float32 on
fixed sample points (a small interpreter over the expression; the candidate never runs): a rule proposes
only where they disagree, which keeps it quiet on kernels that are already right.
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import libcst as cst
import libcst.matchers as m
import torch
from kernel_medic.tools.repair.rules.core import (
    Rewrite,
    Rule,
    RuleContext,
    _arg,
    _calls,
    _dotted,
    _expr,
    _kernels,
    _names,
    _params,
    _render,
    _replace_many,
    _rewrite,
    _Tree,
    _tree,
)


class _Unsupported(Exception):
    """The reference (or the candidate's expression) uses something this module does not model."""


# ---------------------------------------------------------------- PyTorch's elementwise definitions

_TANH = "(2.0 * tl.sigmoid(2.0 * {}) - 1.0)"  # the interpreter has no tl.tanh; this form is stable
_SOFTPLUS1 = "tl.where(_x > 20.0, _x, tl.log(1.0 + tl.exp(_x)))"


@dataclass(frozen=True)
class _Op:
    """A PyTorch elementwise function: its tensor arguments, numeric/static parameters and Triton formula."""

    tensors: tuple[str, ...]  # template names of the tensor arguments, in call order
    params: tuple[tuple[str, Any], ...] = ()  # (name, default) in positional order after the tensors
    formula: str | Callable[[dict[str, Any]], str] = ""
    domains: tuple[str, ...] = ()  # sample domain of each tensor argument
    module_params: tuple[str, ...] = ()  # the nn.Module constructor's positional order
    no_tensor: tuple[str, ...] = ()  # parameters that must stay None (weights this module does not model)


_REQUIRED = object()
_LOSS = (("size_average", None), ("reduce", None), ("reduction", "mean"))


def _gelu(static: dict[str, Any]) -> str:
    if static["approximate"] == "tanh":
        return "_x * tl.sigmoid(1.5957691216057308 * (_x + 0.044715 * _x * _x * _x))"
    return "0.5 * _x * (1.0 + tl.erf(_x * 0.7071067811865476))"


def _kl(static: dict[str, Any]) -> str:
    if static["log_target"]:
        return "tl.exp(_y) * (_y - _x)"
    return "tl.where(_y > 0.0, _y * tl.log(_y), 0.0) - _y * _x"


_OPS: dict[str, _Op] = {
    "gelu": _Op(("_x",), (("approximate", "none"),), _gelu, module_params=("approximate",)),
    "silu": _Op(("_x",), formula="_x * tl.sigmoid(_x)"),
    "sigmoid": _Op(("_x",), formula="tl.sigmoid(_x)"),
    "tanh": _Op(("_x",), formula=_TANH.format("_x")),
    "relu": _Op(("_x",), formula="tl.maximum(_x, 0.0)"),
    "relu6": _Op(("_x",), formula="tl.minimum(tl.maximum(_x, 0.0), 6.0)"),
    "hardsigmoid": _Op(("_x",), formula="tl.minimum(tl.maximum(_x + 3.0, 0.0), 6.0) / 6.0"),
    "hardswish": _Op(("_x",), formula="_x * tl.minimum(tl.maximum(_x + 3.0, 0.0), 6.0) / 6.0"),
    "leaky_relu": _Op(
        ("_x",),
        (("negative_slope", 0.01),),
        "tl.where(_x > 0.0, _x, _x * _negative_slope)",
        module_params=("negative_slope",),
    ),
    "elu": _Op(
        ("_x",),
        (("alpha", 1.0),),
        "tl.where(_x > 0.0, _x, _alpha * (tl.exp(_x) - 1.0))",
        module_params=("alpha",),
    ),
    "celu": _Op(
        ("_x",),
        (("alpha", 1.0),),
        "tl.where(_x > 0.0, _x, _alpha * (tl.exp(_x / _alpha) - 1.0))",
        module_params=("alpha",),
    ),
    "selu": _Op(
        ("_x",),
        formula="1.0507009873554805 * tl.where(_x > 0.0, _x, 1.6732632423543772 * (tl.exp(_x) - 1.0))",
    ),
    "softplus": _Op(
        ("_x",),
        (("beta", 1.0), ("threshold", 20.0)),
        "tl.where(_x * _beta > _threshold, _x, tl.log(1.0 + tl.exp(_x * _beta)) / _beta)",
        module_params=("beta", "threshold"),
    ),
    "mish": _Op(("_x",), formula="_x * " + _TANH.format(_SOFTPLUS1)),
    "hardtanh": _Op(
        ("_x",),
        (("min_val", -1.0), ("max_val", 1.0)),
        "tl.minimum(tl.maximum(_x, _min_val), _max_val)",
        module_params=("min_val", "max_val"),
    ),
    "logsigmoid": _Op(("_x",), formula="tl.minimum(_x, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(_x)))"),
    "softsign": _Op(("_x",), formula="_x / (1.0 + tl.abs(_x))"),
    "tanhshrink": _Op(("_x",), formula="_x - " + _TANH.format("_x")),
    "softshrink": _Op(
        ("_x",),
        (("lambd", 0.5),),
        "tl.where(_x > _lambd, _x - _lambd, tl.where(_x < -_lambd, _x + _lambd, 0.0))",
        module_params=("lambd",),
    ),
    "hardshrink": _Op(
        ("_x",), (("lambd", 0.5),), "tl.where(tl.abs(_x) > _lambd, _x, 0.0)", module_params=("lambd",)
    ),
    "threshold": _Op(
        ("_x",),
        (("threshold", _REQUIRED), ("value", _REQUIRED)),
        "tl.where(_x > _threshold, _x, _value)",
        module_params=("threshold", "value"),
    ),
    "l1_loss": _Op(("_x", "_y"), _LOSS, "tl.abs(_x - _y)", module_params=tuple(p for p, _ in _LOSS)),
    "mse_loss": _Op(("_x", "_y"), _LOSS, "(_x - _y) * (_x - _y)", module_params=tuple(p for p, _ in _LOSS)),
    "smooth_l1_loss": _Op(
        ("_x", "_y"),
        (*_LOSS, ("beta", 1.0)),
        "tl.where(tl.abs(_x - _y) < _beta, 0.5 * (_x - _y) * (_x - _y) / _beta, "
        "tl.abs(_x - _y) - 0.5 * _beta)",
        module_params=(*(p for p, _ in _LOSS), "beta"),
    ),
    "huber_loss": _Op(
        ("_x", "_y"),
        (("reduction", "mean"), ("delta", 1.0)),
        "tl.where(tl.abs(_x - _y) < _delta, 0.5 * (_x - _y) * (_x - _y), "
        "_delta * (tl.abs(_x - _y) - 0.5 * _delta))",
        module_params=("reduction", "delta"),
    ),
    "binary_cross_entropy_with_logits": _Op(
        ("_x", "_y"),
        (("weight", None), *_LOSS, ("pos_weight", None)),
        "tl.maximum(_x, 0.0) - _x * _y + tl.log(1.0 + tl.exp(-tl.abs(_x)))",
        ("real", "unit"),
        ("weight", *(p for p, _ in _LOSS), "pos_weight"),
        ("weight", "pos_weight"),
    ),
    "binary_cross_entropy": _Op(
        ("_x", "_y"),
        (("weight", None), *_LOSS),
        # PyTorch clamps each log at -100 so that p in {0, 1} stays finite.
        "-(_y * tl.maximum(tl.log(_x), -100.0) + (1.0 - _y) * tl.maximum(tl.log(1.0 - _x), -100.0))",
        ("unit", "unit"),
        ("weight", *(p for p, _ in _LOSS)),
        ("weight",),
    ),
    "kl_div": _Op(
        ("_x", "_y"),
        (*_LOSS, ("log_target", False)),
        _kl,
        ("real", "unit"),
        (*(p for p, _ in _LOSS), "log_target"),
    ),
    "soft_margin_loss": _Op(
        ("_x", "_y"),
        _LOSS,
        "tl.log(1.0 + tl.exp(-_y * _x))",
        ("real", "sign"),
        tuple(p for p, _ in _LOSS),
    ),
    "hinge_embedding_loss": _Op(
        ("_x", "_y"),
        (("margin", 1.0), *_LOSS),
        "tl.where(_y != 1.0, tl.maximum(_margin - _x, 0.0), 0.0) + tl.where(_y != -1.0, _x, 0.0)",
        ("real", "sign"),
        ("margin", *(p for p, _ in _LOSS)),
    ),
}
_STATIC = {"approximate", "reduction", "log_target", "size_average", "reduce", "weight", "pos_weight"}

_MODULES = {
    "GELU": "gelu",
    "SiLU": "silu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "ReLU": "relu",
    "ReLU6": "relu6",
    "Hardsigmoid": "hardsigmoid",
    "Hardswish": "hardswish",
    "LeakyReLU": "leaky_relu",
    "ELU": "elu",
    "CELU": "celu",
    "SELU": "selu",
    "Softplus": "softplus",
    "Mish": "mish",
    "Hardtanh": "hardtanh",
    "LogSigmoid": "logsigmoid",
    "Softsign": "softsign",
    "Tanhshrink": "tanhshrink",
    "Softshrink": "softshrink",
    "Hardshrink": "hardshrink",
    "Threshold": "threshold",
    "L1Loss": "l1_loss",
    "MSELoss": "mse_loss",
    "SmoothL1Loss": "smooth_l1_loss",
    "HuberLoss": "huber_loss",
    "BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
    "BCELoss": "binary_cross_entropy",
    "KLDivLoss": "kl_div",
    "SoftMarginLoss": "soft_margin_loss",
    "HingeEmbeddingLoss": "hinge_embedding_loss",
}

# Plain torch functions (and tensor methods) with a direct Triton spelling; `_a`, `_b`, `_c` are the args.
_TORCH = {
    "exp": "tl.exp(_a)",
    "log": "tl.log(_a)",
    "abs": "tl.abs(_a)",
    "sqrt": "tl.sqrt(_a)",
    "rsqrt": "tl.rsqrt(_a)",
    "erf": "tl.erf(_a)",
    "exp2": "tl.exp2(_a)",
    "log2": "tl.log2(_a)",
    "log1p": "tl.log(1.0 + _a)",
    "expm1": "(tl.exp(_a) - 1.0)",
    "square": "_a * _a",
    "neg": "-_a",
    "negative": "-_a",
    "reciprocal": "1.0 / _a",
    "maximum": "tl.maximum(_a, _b)",
    "minimum": "tl.minimum(_a, _b)",
    "where": "tl.where(_a, _b, _c)",
    "sub": "_a - _b",
    "add": "_a + _b",
    "mul": "_a * _b",
    "div": "_a / _b",
}
_IDENTITY = {"contiguous", "float", "clone", "detach"}
_REDUCE = {"mean", "sum"}
_PREFIXES = ("torch.nn.functional.", "nn.functional.", "F.", "torch.special.", "torch.")


# ---------------------------------------------------------------- the reference, read into a Triton formula


@dataclass(frozen=True)
class _Const:
    """A numeric constant of the reference: its value and the names that carry it (attribute, ctor arg)."""

    value: float | None
    keys: frozenset[str] = (
        frozenset()
    )  # empty: a literal of the reference, never taken from a kernel argument


@dataclass(frozen=True)
class _Formula:
    expr: ast.expr  # Triton expression; input i is the Name `_in{i}`, constant j the Name `_k{j}`
    consts: tuple[_Const, ...]
    domains: tuple[str, ...]
    what: str  # what the reference computes, for descriptions


def _subst(template: str | ast.expr, names: dict[str, ast.expr]) -> ast.expr:
    tree = ast.parse(template, mode="eval").body if isinstance(template, str) else copy.deepcopy(template)

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return copy.deepcopy(names[node.id]) if node.id in names else node

    return Sub().visit(tree)


def _dotted_ast(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_ast(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _short(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class _Reader:
    """Translates the reference Model's forward into a `_Formula`."""

    def __init__(self, model: ast.ClassDef, init_params: dict[str, Any]) -> None:
        self.params = init_params
        self.attrs: dict[str, ast.expr] = {}
        self.forward: ast.FunctionDef | None = None
        for fn in model.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign) and len(node.targets) == 1:
                        target = node.targets[0]
                        if isinstance(target, ast.Attribute) and _dotted_ast(target.value) == "self":
                            self.attrs[target.attr] = node.value
            elif isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                self.forward = fn
        self.consts: list[_Const] = []
        self.domains: dict[int, str] = {}
        self.inputs: dict[str, ast.expr] = {}
        self.what: list[str] = []

    def read(self) -> _Formula | None:
        if self.forward is None:
            return None
        args = [a.arg for a in self.forward.args.args[1:]]
        self.inputs = {name: ast.Name(f"_in{i}") for i, name in enumerate(args)}
        body = [
            s
            for s in self.forward.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        try:
            for stmt in body:
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                ):
                    self.inputs[stmt.targets[0].id] = self.tr(stmt.value, top=True)
                elif isinstance(stmt, ast.Return) and stmt.value is not None:
                    expr = self.tr(stmt.value, top=True)
                    domains = tuple(self.domains.get(i, "real") for i in range(len(args)))
                    single = len(self.what) == 1 and isinstance(stmt.value, ast.Call | ast.Name)
                    what = self.what[0] if single else ast.unparse(stmt.value)
                    return _Formula(expr, tuple(self.consts), domains, what[:80])
                else:
                    return None
        except (_Unsupported, RecursionError):
            return None
        return None

    # -- values

    def const(self, node: ast.expr, keys: set[str]) -> ast.expr:
        """A numeric constant from a literal, `self.X`, or a constructor argument."""
        value, found = self.static(node, keys)
        number = _number(value)
        if number is None and value is not None:
            raise _Unsupported("non-numeric constant")
        self.consts.append(_Const(number, frozenset(found)))
        return ast.Name(f"_k{len(self.consts) - 1}")

    def static(self, node: ast.expr, keys: set[str] | None = None) -> tuple[Any, set[str]]:
        """(value, carrier names) of a constant; carriers only when it comes from the constructor."""
        keys = set() if keys is None else set(keys)
        if isinstance(node, ast.Constant):
            return node.value, set()
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value, found = self.static(node.operand, keys)
            if _number(value) is None or found:
                raise _Unsupported("negated constructor constant")
            return -value, set()
        if isinstance(node, ast.Call) and _dotted_ast(node.func) in ("float", "int") and len(node.args) == 1:
            return self.static(node.args[0], keys)
        if isinstance(node, ast.Attribute) and _dotted_ast(node.value) == "self":
            if node.attr not in self.attrs:
                raise _Unsupported(f"self.{node.attr}")
            return self.static(self.attrs[node.attr], keys | {node.attr})
        if isinstance(node, ast.Name) and node.id in self.params:
            return self.params[node.id], keys | {node.id}
        raise _Unsupported(ast.unparse(node))

    # -- expressions

    def tr(self, node: ast.expr, top: bool = False) -> ast.expr:
        if isinstance(node, ast.Name):
            if node.id in self.inputs:
                return copy.deepcopy(self.inputs[node.id])
            raise _Unsupported(node.id)
        if isinstance(node, ast.Constant) and _number(node.value) is not None:
            return ast.Constant(float(node.value))
        if isinstance(node, ast.Attribute) and _dotted_ast(node.value) == "self":
            return self.const(node, set())
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            return ast.UnaryOp(node.op, self.tr(node.operand))
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return self.power(self.tr(node.left), node.right)
            if isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
                return ast.BinOp(self.tr(node.left), node.op, self.tr(node.right))
            raise _Unsupported("operator")
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return ast.Compare(self.tr(node.left), node.ops, [self.tr(node.comparators[0])])
        if isinstance(node, ast.Call):
            return self.call(node, top)
        raise _Unsupported(type(node).__name__)

    def power(self, base: ast.expr, exponent: ast.expr) -> ast.expr:
        value, _ = self.static(exponent)
        if value == 2:
            return _subst("_a * _a", {"_a": base})
        if value == 3:
            return _subst("_a * _a * _a", {"_a": base})
        if value == 0.5:
            return _subst("tl.sqrt(_a)", {"_a": base})
        raise _Unsupported("power")

    def call(self, node: ast.Call, top: bool) -> ast.expr:
        func = node.func
        args: list[ast.expr] = list(node.args)
        name = _dotted_ast(func)
        if isinstance(func, ast.Attribute) and _dotted_ast(func.value) == "self":
            module = self.attrs.get(func.attr)
            if not isinstance(module, ast.Call):
                raise _Unsupported(f"self.{func.attr}")
            return self.module(module, args)
        if isinstance(func, ast.Call):
            return self.module(func, args)
        if name is None or not name.startswith(("torch.", "nn.", "F.")):
            # A tensor method: `x.sigmoid()`, `(a - b).abs().mean()`.
            if not isinstance(func, ast.Attribute):
                raise _Unsupported(name or "call")
            args = [func.value, *args]
            short = func.attr
        else:
            short = _short(name)
        if short in _REDUCE:
            if not top:
                raise _Unsupported("reduction inside the formula")
            return self.tr(args[0], top=True)
        if short in _IDENTITY and len(args) == 1:
            return self.tr(args[0], top)
        if short in ("clamp", "clip", "clamp_min", "clamp_max"):
            return self.clamp(short, args, node.keywords)
        if short == "pow" and len(args) == 2:
            return self.power(self.tr(args[0]), args[1])
        if short in _OPS:
            return self.op(short, args, {k.arg: k.value for k in node.keywords if k.arg}, {})
        if short in _TORCH and not node.keywords:
            names = {f"_{c}": self.tr(a) for c, a in zip("abc", args, strict=False)}
            return _subst(_TORCH[short], names)
        raise _Unsupported(short)

    def clamp(self, short: str, args: list[ast.expr], keywords: list[ast.keyword]) -> ast.expr:
        kw = {k.arg: k.value for k in keywords if k.arg}
        names = {"min": 1, "max": 2} if short in ("clamp", "clip") else {short.removeprefix("clamp_"): 1}
        out = self.tr(args[0])
        for bound, position in names.items():
            value = kw.get(bound, args[position] if position < len(args) else None)
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                continue
            fn = "tl.maximum" if bound == "min" else "tl.minimum"
            out = _subst(f"{fn}(_a, _b)", {"_a": out, "_b": self.const(value, {bound})})
        return out

    def module(self, ctor: ast.Call, args: list[ast.expr]) -> ast.expr:
        cls = (_dotted_ast(ctor.func) or "").split(".")[-1]
        if cls not in _MODULES:
            raise _Unsupported(cls)
        op = _OPS[_MODULES[cls]]
        values: dict[str, ast.expr] = dict(zip(op.module_params, ctor.args, strict=False))
        values.update({k.arg: k.value for k in ctor.keywords if k.arg})
        return self.op(_MODULES[cls], args, {}, values)

    def op(
        self, name: str, args: list[ast.expr], keywords: dict[str, ast.expr], ctor: dict[str, ast.expr]
    ) -> ast.expr:
        spec = _OPS[name]
        tensors = dict(zip(spec.tensors, args, strict=False))
        for key, template in zip(("input", "target"), spec.tensors, strict=False):
            if key in keywords:
                tensors[template] = keywords.pop(key)
        if len(tensors) != len(spec.tensors):
            raise _Unsupported(f"{name}: missing tensor argument")
        given = dict(zip((p for p, _ in spec.params), args[len(spec.tensors) :], strict=False))
        given.update(keywords)
        given.update(ctor)
        names: dict[str, ast.expr] = {}
        for template, arg in tensors.items():
            names[template] = self.tr(arg)
            if isinstance(arg, ast.Name) and isinstance(names[template], ast.Name):
                index = int(names[template].id.removeprefix("_in"))  # type: ignore[attr-defined]
                domains = spec.domains or ("real",) * len(spec.tensors)
                self.domains.setdefault(index, domains[spec.tensors.index(template)])
        static: dict[str, Any] = {}
        for param, default in spec.params:
            node = given.get(param)
            if param in _STATIC or param in spec.no_tensor:
                value = default if node is None else self.static(node)[0]
                if param in spec.no_tensor and value is not None:
                    raise _Unsupported(f"{name}: {param}")
                static[param] = value
            elif node is None:
                if default is _REQUIRED:
                    raise _Unsupported(f"{name}: {param}")
                self.consts.append(_Const(float(default)))
                names[f"_{param}"] = ast.Name(f"_k{len(self.consts) - 1}")
            else:
                names[f"_{param}"] = self.const(node, {param})
        formula = spec.formula(static) if callable(spec.formula) else spec.formula
        described = [
            f"{p}={ast.unparse(given[p])}" for p, _ in spec.params if p in given and p not in _STATIC
        ]
        if name == "gelu":
            described = [f"approximate={static['approximate']!r}"]
        self.what.append(f"{name}({', '.join(described)})" if described else name)
        return _subst(formula, names)


@lru_cache(maxsize=32)
def _formula_of(reference_source: str, init_args: tuple[Any, ...]) -> _Formula | None:
    try:
        module = ast.parse(reference_source)
    except SyntaxError:
        return None
    context = RuleContext(reference_source, init_args)
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return _Reader(node, context.init_params()).read()
    return None


def _reference_formula(context: RuleContext | None) -> _Formula | None:
    if context is None or not context.reference_source:
        return None
    try:
        return _formula_of(context.reference_source, context.init_args)
    except TypeError:  # unhashable constructor arguments
        return None


def _render_formula(formula: _Formula, operands: list[str], consts: list[str]) -> str:
    names: dict[str, ast.expr] = {f"_in{i}": ast.Name(v) for i, v in enumerate(operands)}
    names.update({f"_k{j}": ast.parse(c, mode="eval").body for j, c in enumerate(consts)})
    return ast.unparse(_Simplify().visit(_subst(formula.expr, names)))


class _Simplify(ast.NodeTransformer):
    """Drop products and quotients with a literal 1 (softplus with beta = 1 reads as PyTorch writes it)."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        one = [isinstance(s, ast.Constant) and s.value == 1.0 for s in (node.left, node.right)]
        if isinstance(node.op, ast.Mult) and one[0]:
            return node.right
        if isinstance(node.op, ast.Mult | ast.Div) and one[1]:
            return node.left
        return node


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
        tree: _Tree,
        fn: cst.FunctionDef,
        env: dict[str, Any],
        helpers: dict[str, cst.FunctionDef],
        overrides: dict[cst.CSTNode, Any] | None = None,
    ) -> None:
        self.tree, self.fn, self.env, self.helpers = tree, fn, env, helpers
        self.overrides = overrides or {}
        self.literals: list[cst.BaseExpression] = []  # numeric literals the value depends on
        self.defs: dict[str, list[tuple[int, cst.BaseExpression | None]]] = {}
        for node in m.findall(fn.body, m.Assign() | m.AnnAssign() | m.AugAssign()):
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


# ---------------------------------------------------------------- the candidate: inputs, constants, values


@dataclass(frozen=True)
class _Binding:
    """What a host-side name holds: reference input `index`, or a constant carried by `keys`."""

    index: int | None = None
    keys: frozenset[str] = frozenset()


_ALIAS_METHODS = {
    "contiguous",
    "view",
    "reshape",
    "flatten",
    "ravel",
    "to",
    "float",
    "double",
    "half",
    "squeeze",
    "unsqueeze",
    "detach",
    "clone",
    "view_as",
    "reshape_as",
    "expand",
    "expand_as",
}


def _host_binding(
    expr: cst.BaseExpression, scope: dict[str, _Binding], self_keys: dict[str, set[str]]
) -> _Binding | None:
    while True:
        if isinstance(expr, cst.Call):
            func = expr.func
            name = _dotted(func) or ""
            if name in ("float", "torch.flatten", "torch.reshape") and expr.args:
                expr = expr.args[0].value
            elif isinstance(func, cst.Attribute) and func.attr.value in _ALIAS_METHODS:
                expr = func.value
            else:
                return None
        elif isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return _Binding(keys=frozenset(self_keys.get(expr.attr.value, {expr.attr.value})))
            return None
        elif isinstance(expr, cst.Name):
            return scope.get(expr.value)
        else:
            return None


@dataclass
class _Launch:
    kernel: cst.FunctionDef
    inputs: dict[str, int] = field(default_factory=dict)  # kernel parameter -> reference input
    consts: dict[str, frozenset[str]] = field(default_factory=dict)  # kernel parameter -> carrier names


def _candidate_launches(tree: _Tree, n_inputs: int) -> list[_Launch]:
    """Kernel launches reached from ModelNew.forward, with the kernel parameters bound to reference inputs."""
    module = tree.module
    kernels = {k.name.value: k for k in _kernels(module)}
    functions: dict[str, cst.FunctionDef] = {
        s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value not in kernels
    }
    methods: dict[str, cst.FunctionDef] = {}
    self_keys: dict[str, set[str]] = {}
    for cls in m.findall(module, m.ClassDef(name=m.Name("ModelNew"))):
        assert isinstance(cls, cst.ClassDef)
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef):
                methods[stmt.name.value] = stmt
    init = methods.get("__init__")
    if init is not None:
        for node in m.findall(init.body, m.Assign()):
            assert isinstance(node, cst.Assign)
            target = node.targets[0].target
            if isinstance(target, cst.Attribute) and _dotted(target.value) == "self":
                keys = {target.attr.value}
                inner = node.value
                while isinstance(inner, cst.Call) and _dotted(inner.func) in ("float", "int") and inner.args:
                    inner = inner.args[0].value
                if isinstance(inner, cst.Name):
                    keys.add(inner.value)
                self_keys[target.attr.value] = keys
    forward = methods.get("forward")
    if forward is None:
        return []
    params = [p.name.value for p in _params(forward) if p.name.value != "self"]
    start = {name: _Binding(index=i) for i, name in enumerate(params[:n_inputs])}
    out: list[_Launch] = []

    def walk(fn: cst.FunctionDef, scope: dict[str, _Binding], depth: int) -> None:
        scope = dict(scope)
        for node in m.findall(fn.body, m.Assign() | m.Call()):
            if isinstance(node, cst.Assign):
                if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                    bound = _host_binding(node.value, scope, self_keys)
                    name = node.targets[0].target.value
                    if bound is not None:
                        scope[name] = bound
                    else:
                        scope.pop(name, None)
                continue
            assert isinstance(node, cst.Call)
            args = [a for a in node.args if not a.star]
            if isinstance(node.func, cst.Subscript) and _dotted(node.func.value) in kernels:
                kernel = kernels[_dotted(node.func.value) or ""]
                names = [p.name.value for p in _params(kernel)]
                launch = _Launch(kernel)
                for i, arg in enumerate(args):
                    param = (
                        arg.keyword.value if arg.keyword is not None else names[i] if i < len(names) else None
                    )
                    bound = _host_binding(arg.value, scope, self_keys)
                    if param is None or bound is None:
                        continue
                    if bound.index is not None:
                        launch.inputs[param] = bound.index
                    else:
                        launch.consts[param] = bound.keys
                if launch.inputs:
                    out.append(launch)
                continue
            callee_name = _dotted(node.func) or ""
            callee = functions.get(callee_name) or methods.get(callee_name.removeprefix("self."))
            if callee is None or callee is fn or depth > 2 or callee_name.removeprefix("self.") == "forward":
                continue
            callee_params = [p.name.value for p in _params(callee) if p.name.value != "self"]
            inner: dict[str, _Binding] = {}
            for i, arg in enumerate(args):
                param = (
                    arg.keyword.value
                    if arg.keyword is not None
                    else callee_params[i]
                    if i < len(callee_params)
                    else None
                )
                bound = _host_binding(arg.value, scope, self_keys)
                if param is not None and bound is not None:
                    inner[param] = bound
            if inner:
                walk(callee, inner, depth + 1)

    walk(forward, start, 0)
    return out


@dataclass
class _Site:
    """One value to rewrite: the expression a kernel stores or reduces, read back to the formula."""

    node: cst.BaseExpression
    line: int
    reduced: bool
    masked: bool


_STRIP = ("tl.sum",)


def _is_mask_where(call: cst.BaseExpression, masks: set[str]) -> cst.BaseExpression | None:
    """The kept branch of `tl.where(mask, value, 0.0)`, the idiom that zeroes padded lanes."""
    if not (isinstance(call, cst.Call) and _dotted(call.func) == "tl.where" and len(call.args) == 3):
        return None
    cond, kept, other = (a.value for a in call.args)
    if _names(cond) & masks and isinstance(other, cst.Integer | cst.Float | cst.UnaryOperation):
        return kept
    return None


def _sites(tree: _Tree, fn: cst.FunctionDef, masks: set[str]) -> list[_Site]:
    defs: dict[str, list[tuple[int, cst.CSTNode]]] = {}
    for node in m.findall(fn.body, m.Assign() | m.AnnAssign() | m.AugAssign()):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]  # type: ignore[union-attr]
        for target in targets:
            if isinstance(target, cst.Name):
                defs.setdefault(target.value, []).append((tree.line(node), node))
    found: list[_Site] = []
    seen: set[int] = set()

    def descend(expr: cst.BaseExpression, line: int, reduced: bool, masked: bool, depth: int) -> None:
        if depth > 12 or id(expr) in seen:
            return
        seen.add(id(expr))
        if (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "to"
        ):
            return descend(expr.func.value, line, reduced, masked, depth + 1)
        kept = _is_mask_where(expr, masks)
        if kept is not None:
            return descend(kept, line, reduced, True, depth + 1)
        sums = _calls(expr, *_STRIP)
        if sums:
            for call in sums:
                if call.args:
                    descend(call.args[0].value, line, True, masked, depth + 1)
            return
        if isinstance(expr, cst.Name):
            earlier = [(at, node) for at, node in defs.get(expr.value, []) if at <= line and node is not None]
            if not earlier:
                return
            at, last = earlier[-1]
            if isinstance(last, cst.AugAssign):
                # An accumulator: each `acc += term` adds one term.
                for at2, node in defs[expr.value]:
                    if isinstance(node, cst.AugAssign):
                        descend(node.value, at2, True, masked, depth + 1)
                return
            value = last.value  # type: ignore[union-attr]
            if value is None:
                return
            if isinstance(value, cst.Call) and _dotted(value.func) in (
                "tl.zeros",
                "tl.full",
                "tl.zeros_like",
            ):
                return
            if (
                isinstance(value, cst.BinaryOperation)
                and expr.value in _names(value)
                and isinstance(value.operator, cst.Add)
            ):
                # `acc = acc + term`
                other = value.right if expr.value in _names(value.left) else value.left
                return descend(other, at, True, masked, depth + 1)
            if expr.value in _names(value):
                kept = _is_mask_where(value, masks)
                if kept is not None:
                    return descend(
                        kept, at - 1 if _names(kept) == {expr.value} else at, reduced, True, depth + 1
                    )
                if (
                    isinstance(value, cst.Call)
                    and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value == "to"
                ):
                    return descend(value.func.value, at - 1, reduced, masked, depth + 1)
            if isinstance(value, cst.Name):
                # `term = d`: rewrite the alias, not `d`, which other code may read.
                found.append(_Site(value, at, reduced, masked))
                return None
            return descend(value, at, reduced, masked, depth + 1)
        found.append(_Site(expr, line, reduced, masked))

    for call in _calls(fn.body, "tl.store", "tl.atomic_add"):
        value = _arg(call, "value" if _dotted(call.func) == "tl.store" else "val", 1)
        if value is not None:
            descend(value.value, tree.line(call), False, False, 0)
    return found


def _loads(fn: cst.FunctionDef, inputs: dict[str, int]) -> dict[int, list[tuple[str, cst.Call]]]:
    """Per reference input: the variables holding its loaded values (upcast copy first) and their load."""
    out: dict[int, list[tuple[str, cst.Call]]] = {}
    assigns = [
        n
        for n in m.findall(fn.body, m.Assign())
        if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
    ]
    for node in assigns:
        value = node.value
        while (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "to"
        ):
            value = value.func.value
        if not (isinstance(value, cst.Call) and _dotted(value.func) == "tl.load" and value.args):
            continue
        pointer = _depends(fn, value.args[0].value) | _names(value.args[0].value)
        for param, index in inputs.items():
            if param in pointer:
                name = node.targets[0].target.value  # type: ignore[union-attr]
                out.setdefault(index, []).append((name, value))
    for held in out.values():
        for name, load in list(held):
            for node in assigns:
                value = node.value
                if (
                    isinstance(value, cst.Call)
                    and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value == "to"
                    and isinstance(value.func.value, cst.Name)
                    and value.func.value.value == name
                ):
                    held.insert(0, (node.targets[0].target.value, load))  # type: ignore[union-attr]
    return out


def _depends(fn: cst.FunctionDef, node: cst.BaseExpression) -> set[str]:
    """Every name `node` reads, directly or through the kernel's assignments."""
    values: dict[str, list[cst.BaseExpression]] = {}
    for target in m.findall(fn.body, m.Assign() | m.AugAssign() | m.AnnAssign()):
        value = getattr(target, "value", None)
        names = (
            set().union(*(_names(t.target) for t in target.targets))  # type: ignore[union-attr]
            if isinstance(target, cst.Assign)
            else _names(target.target)  # type: ignore[union-attr]
        )
        for name in names:
            if value is not None:
                values.setdefault(name, []).append(value)
    seen: set[str] = set()
    todo = list(_names(node))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for value in values.get(name, []):
            todo.extend(_names(value))
    return seen


@dataclass
class _Plan:
    """A site with everything needed to rewrite and check it."""

    tree: _Tree
    fn: cst.FunctionDef
    site: _Site
    operands: list[str]
    consts: list[str]  # how each reference constant is spelled in the kernel (a parameter, else its value)
    env: dict[str, Any]  # sample values: operands, constant parameters, masks
    helpers: dict[str, cst.FunctionDef]
    mask: str | None  # the operands' load mask, for zeroing padded lanes of a reduced term
    canonical: str


def _plans(source: str, context: RuleContext | None) -> tuple[_Formula | None, list[_Plan]]:
    # Both rules read the same plans of the same source: share them.
    try:
        return _cached_plans(source, context)
    except TypeError:  # unhashable constructor arguments
        return _build_plans(source, context)


@lru_cache(maxsize=8)
def _cached_plans(source: str, context: RuleContext | None) -> tuple[_Formula | None, list[_Plan]]:
    return _build_plans(source, context)


def _build_plans(source: str, context: RuleContext | None) -> tuple[_Formula | None, list[_Plan]]:
    formula = _reference_formula(context)
    tree = _tree(source)
    if formula is None or tree is None:
        return formula, []
    n_inputs = len(formula.domains)
    used = {
        int(n.id[3:]) for n in ast.walk(formula.expr) if isinstance(n, ast.Name) and n.id.startswith("_in")
    }
    helpers = {k.name.value: k for k in _kernels(tree.module)}
    plans: list[_Plan] = []
    for launch in _candidate_launches(tree, n_inputs):
        fn = launch.kernel
        loads = _loads(fn, launch.inputs)
        if not used <= set(loads):
            continue
        masks: set[str] = set()
        for _, held in loads.items():
            for _, load in held:
                mask = _arg(load, "mask", 1)
                if mask is not None:
                    masks |= _names(mask.value)
        for mask_call in _calls(fn.body, "tl.store"):
            mask = _arg(mask_call, "mask", 2)
            if mask is not None:
                masks |= _names(mask.value)
        masks = {n for n in masks if n not in {v for held in loads.values() for v, _ in held}}
        consts: list[str] = []
        values: dict[str, Any] = {}
        for const in formula.consts:
            param = next((p for p, keys in launch.consts.items() if const.keys and keys & const.keys), None)
            if param is None and const.keys:
                # A kernel parameter named like the constant and fed from the model (`self.<x>`).
                param = next((p for p in launch.consts if p in const.keys), None)
            if param is not None:
                consts.append(param)
                if const.value is not None:
                    values[param] = const.value
            elif const.value is not None:
                consts.append(repr(float(const.value)))
            else:
                break
        else:
            for site in _sites(tree, fn, masks):
                deps = _depends(fn, site.node) | _names(site.node)
                operands: list[str] = []
                chosen: list[cst.Call] = []
                for i in range(n_inputs):
                    held = loads.get(i, [])
                    pick = next(((v, ld) for v, ld in held if v in deps), held[0] if held else None)
                    if pick is None:
                        operands.append(f"_unused{i}")
                        continue
                    operands.append(pick[0])
                    chosen.append(pick[1])
                if not set(operands) & deps:
                    continue
                env: dict[str, Any] = {name: True for name in masks}
                env.update(values)
                for i, name in enumerate(operands):
                    env[name] = _samples(formula.domains[i], i)
                mask_arg = _arg(chosen[0], "mask", 1) if chosen else None
                mask = _render(mask_arg.value) if mask_arg is not None else None
                canonical = _render_formula(formula, operands, consts)
                plans.append(_Plan(tree, fn, site, operands, consts, env, helpers, mask, canonical))
    return formula, plans


def _evaluate(
    plan: _Plan, node: cst.BaseExpression, overrides: dict[cst.CSTNode, Any] | None = None
) -> tuple[Any, list[cst.BaseExpression]]:
    evaluator = _Evaluator(plan.tree, plan.fn, plan.env, plan.helpers, overrides)
    with torch.no_grad():
        value = evaluator.value(node, plan.site.line)
    return value, evaluator.literals


def _canonical_value(plan: _Plan) -> Any:
    node = _expr(plan.canonical)
    evaluator = _Evaluator(plan.tree, plan.fn, plan.env, plan.helpers)
    with torch.no_grad():
        return evaluator.value(node, 10**9, dict(plan.env))


def _current(plan: _Plan) -> tuple[Any, list[cst.BaseExpression]] | None:
    try:
        return _evaluate(plan, plan.site.node)
    except (_Unsupported, RuntimeError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None


def _wanted(plan: _Plan) -> Any:
    try:
        return _canonical_value(plan)
    except (_Unsupported, RuntimeError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None


# ---------------------------------------------------------------- reference_formula


def _reference_formula_rule(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Replace the stored (or reduced) value with the reference's formula over the kernel's loaded inputs."""
    formula, plans = _plans(source, context)
    out: list[Rewrite] = []
    for plan in plans:
        current, wanted = _current(plan), _wanted(plan)
        if current is not None and wanted is not None and _close(current[0], wanted):
            continue
        code = plan.canonical
        if plan.site.reduced and not plan.site.masked and plan.mask is not None:
            # Padded lanes load `other` values whose loss need not be zero (BCE of 0 is log 2).
            code = f"tl.where({plan.mask}, {code}, 0.0)"
        new = plan.tree.replace(
            plan.site.node, _expr(code).with_changes(lpar=plan.site.node.lpar, rpar=plan.site.node.rpar)
        )
        assert formula is not None
        what = f"{plan.fn.name.value}: {formula.what} as PyTorch defines it"
        out.append(_rewrite("reference_formula", new, plan.tree.line(plan.site.node), what))
    return out


# ---------------------------------------------------------------- reference_constant


def _constant_pool(plan: _Plan, formula: _Formula) -> list[tuple[str, float]]:
    """(spelling, value) a wrong literal may have meant: the reference's constants, the formula's numbers."""
    pool: list[tuple[str, float]] = []
    for spelled, const in zip(plan.consts, formula.consts, strict=True):
        if const.value is not None:
            pool.append((spelled, const.value))
    numbers = {
        n.value
        for n in ast.walk(formula.expr)
        if isinstance(n, ast.Constant) and _number(n.value) is not None
    }
    for number in sorted(numbers, key=abs):
        for value in (number, 1.0 / number if number else None, -number):
            if value is not None and math.isfinite(value) and value not in (0.0, 1.0, -1.0):
                pool.append((repr(float(value)), float(value)))
    seen: set[str] = set()
    return [p for p in pool if not (p[0] in seen or seen.add(p[0]))]  # type: ignore[func-returns-value]


def _reference_constant(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """The formula's shape is right but a literal is not the reference's constant: replace one or two."""
    formula, plans = _plans(source, context)
    out: list[Rewrite] = []
    for plan in plans:
        current, wanted = _current(plan), _wanted(plan)
        if current is None or wanted is None or _close(current[0], wanted):
            continue
        assert formula is not None
        literals = list(dict.fromkeys(current[1]))
        literals = [n for n in literals if not any(n is not o and n in _children(o) for o in literals)]
        pool = _constant_pool(plan, formula)
        ctor = pool[: sum(1 for c in formula.consts if c.value is not None)]
        trials: list[dict[cst.CSTNode, tuple[str, float]]] = [
            {lit: choice} for lit in literals for choice in pool
        ]
        trials += [
            {a: ca, b: cb}
            for a, b in itertools.combinations(literals, 2)
            for ca, cb in itertools.product(ctor, repeat=2)
        ]
        for trial in trials[:2000]:
            if any(_literal(n) == v for n, (_, v) in trial.items()):
                continue  # a smaller trial covers it
            try:
                value, _ = _evaluate(plan, plan.site.node, {n: v for n, (_, v) in trial.items()})
            except (_Unsupported, RuntimeError, TypeError, ValueError, ZeroDivisionError):
                continue
            if not _close(value, wanted):
                continue
            new = _replace_many(plan.tree.module, {n: _expr(s) for n, (s, _) in trial.items()})
            changes = ", ".join(f"{_render(n)} -> {s}" for n, (s, _) in trial.items())
            line = min(plan.tree.line(n) for n in trial)
            what = f"{plan.fn.name.value}: {changes}, the constant(s) of {formula.what}"
            out.append(_rewrite("reference_constant", new, line, what))
            if len(out) >= 3:
                return out
    return out


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(m.findall(node, m.Integer() | m.Float()))


def _literal(node: cst.CSTNode) -> float | None:
    if isinstance(node, cst.Integer | cst.Float):
        return float(node.value.replace("_", ""))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer | cst.Float):
        return -float(node.expression.value.replace("_", ""))
    return None


RULES: tuple[Rule, ...] = (
    Rule(
        "reference_formula",
        "activation / per-element loss written as the reference's PyTorch definition",
        "operator_misread",
        ("everywhere", "scattered", "x100", "all_negative", "constant_ratio", "nan", "inf"),
        _reference_formula_rule,
    ),
    Rule(
        "reference_constant",
        "literal replaced by the reference's constant (constructor value or PyTorch's)",
        "operator_misread",
        ("everywhere", "scattered", "all_negative", "constant_ratio"),
        _reference_constant,
    ),
)
