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
only where they disagree, which keeps it quiet on kernels that are already right. Reading the reference is
`formula_reference.py`, the interpreter `formula_eval.py`; this module finds the candidate's sites.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import libcst as cst
import libcst.matchers as m
import torch
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _arg,
    _calls,
    _dotted,
    _expr,
    _kernels,
    _names,
    _params,
    _render,
    _replace_many,
    _tree,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.rules.formula_eval import (
    _close,
    _Evaluator,
    _samples,
)
from kernel_medic.tools.repair.rules.formula_reference import (
    _Formula,
    _number,
    _reference_formula,
    _render_formula,
    _Unsupported,
)

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


def _candidate_launches(tree: Tree, n_inputs: int) -> list[_Launch]:
    """Kernel launches reached from ModelNew.forward, with the kernel parameters bound to reference inputs."""
    module = tree.module
    kernels = {k.name.value: k for k in _kernels(module)}
    functions: dict[str, cst.FunctionDef] = {
        s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value not in kernels
    }
    methods: dict[str, cst.FunctionDef] = {}
    self_keys: dict[str, set[str]] = {}
    for cls in findall(module, m.ClassDef(name=m.Name("ModelNew"))):
        assert isinstance(cls, cst.ClassDef)
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef):
                methods[stmt.name.value] = stmt
    init = methods.get("__init__")
    if init is not None:
        for node in findall(init.body, m.Assign()):
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
        for node in findall(fn.body, m.Assign() | m.Call()):
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


def _sites(tree: Tree, fn: cst.FunctionDef, masks: set[str]) -> list[_Site]:
    defs: dict[str, list[tuple[int, cst.CSTNode]]] = {}
    for node in findall(fn.body, m.Assign() | m.AnnAssign() | m.AugAssign()):
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
        for n in findall(fn.body, m.Assign())
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
    for target in findall(fn.body, m.Assign() | m.AugAssign() | m.AnnAssign()):
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

    tree: Tree
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


@rule(
    "reference_formula",
    title="activation / per-element loss written as the reference's PyTorch definition",
    bug_class="operator_misread",
    symptoms=("everywhere", "scattered", "x100", "all_negative", "constant_ratio", "nan", "inf"),
    per="module",
)
def reference_formula(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Replace the stored (or reduced) value with the reference's formula over the kernel's loaded inputs."""
    formula, plans = _plans(tree.source, context)
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
        yield Edit(new, plan.tree.line(plan.site.node), what)


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


@rule(
    "reference_constant",
    title="literal replaced by the reference's constant (constructor value or PyTorch's)",
    bug_class="operator_misread",
    symptoms=("everywhere", "scattered", "all_negative", "constant_ratio"),
    per="module",
)
def reference_constant(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """The formula's shape is right but a literal is not the reference's constant: replace one or two."""
    formula, plans = _plans(tree.source, context)
    found = 0
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
            yield Edit(new, line, what)
            found += 1
            if found >= 3:
                return


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(findall(node, m.Integer() | m.Float()))


def _literal(node: cst.CSTNode) -> float | None:
    if isinstance(node, cst.Integer | cst.Float):
        return float(node.value.replace("_", ""))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer | cst.Float):
        return -float(node.expression.value.replace("_", ""))
    return None


RULES = rules_of(__name__)
