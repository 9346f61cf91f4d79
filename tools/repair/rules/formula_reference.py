"""Reading the reference: PyTorch's elementwise activations and losses as Triton formulas."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kernel_medic.tools.repair.rules.base import (
    RuleContext,
    rules_of,
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
_TORCH.update({name: f"tl.{name}(_a)" for name in ("cos", "sin", "floor", "ceil")})
_TORCH.update({
    "trunc": "tl.where(_a >= 0.0, tl.floor(_a), tl.ceil(_a))",
    "rad2deg": "_a * 57.29577951308232",
    "deg2rad": "_a * 0.017453292519943295",
})
_IDENTITY = {"contiguous", "float", "clone", "detach"}
_FILLED = {"zeros_like": 0.0, "ones_like": 1.0}
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

    def __init__(
        self, model: ast.ClassDef, init_params: dict[str, Any], functions: dict[str, ast.FunctionDef]
    ) -> None:
        self.params = init_params
        self.functions = functions  # the reference module's own functions, which the forward may call
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
        if isinstance(func, ast.Name) and func.id in self.functions:
            return self.tr(_inlined(self.functions[func.id], node), top)
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
        if short in _FILLED and len(args) == 1:
            return ast.Constant(_FILLED[short])
        if short in _IDENTITY and len(args) == 1:
            return self.tr(args[0], top)
        if short in ("clamp", "clip", "clamp_min", "clamp_max"):
            return self.clamp(short, args, node.keywords)
        if short == "pow" and len(args) == 2:
            return self.power(self.tr(args[0]), args[1])
        if short in _OPS:
            return self.op(short, args, {k.arg: k.value for k in node.keywords if k.arg}, {})
        if short in _TORCH and all(k.arg == "out" and _is_none(k.value) for k in node.keywords):
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


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _static_truth(node: ast.expr) -> bool | None:
    """The truth of a test over literals (`None is not None`, `not False`), or None when it needs a value."""
    try:
        return bool(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _static_truth(node.operand)
        return None if inner is None else not inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Is | ast.IsNot):
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
            return (left.value is right.value) == isinstance(node.ops[0], ast.Is)
    return None


def _inlined(fn: ast.FunctionDef, call: ast.Call) -> ast.expr:
    """A call of a function the reference defines (TritonBench's references are functions a Model calls),
    as one expression in the caller's names: parameters bound, local assignments substituted, branches on
    literal arguments (`out=None`, `inplace=False`) taken. Anything else is beyond this reader."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    env: dict[str, ast.expr] = dict(zip((p.arg for p in reversed(params)), reversed(fn.args.defaults)))
    env.update({p.arg: d for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d})
    if len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args):
        raise _Unsupported(f"{fn.name}: arguments")
    env.update({p.arg: a for p, a in zip(params, call.args, strict=False)})
    names = {p.arg for p in [*params, *fn.args.kwonlyargs]}
    for keyword in call.keywords:
        if keyword.arg not in names:
            raise _Unsupported(f"{fn.name}: keyword")
        env[keyword.arg] = keyword.value
    if names - set(env):
        raise _Unsupported(f"{fn.name}: missing argument")
    body = list(fn.body)
    while body:
        stmt = body.pop(0)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                raise _Unsupported(f"{fn.name}: assignment")
            env[targets[0].id] = _subst(stmt.value, env)
        elif isinstance(stmt, ast.If) and (taken := _static_truth(_subst(stmt.test, env))) is not None:
            body = [*(stmt.body if taken else stmt.orelse), *body]
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            return _subst(stmt.value, env)
        else:
            raise _Unsupported(f"{fn.name}: {type(stmt).__name__}")
    raise _Unsupported(f"{fn.name}: no return")


@lru_cache(maxsize=32)
def _formula_of(reference_source: str, init_args: tuple[Any, ...]) -> _Formula | None:
    try:
        module = ast.parse(reference_source)
    except SyntaxError:
        return None
    context = RuleContext(reference_source, init_args)
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return _Reader(node, context.init_params(), functions).read()
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


RULES = rules_of(__name__)
