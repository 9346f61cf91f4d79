"""Size formulas missing a term (part of the edit space).

When the evaluator reports an output of the wrong shape, a size the host computes with arithmetic (an output
length, a window count) gains or loses one term: a module attribute or a name in the formula's function, once
or twice (`2 * self.padding`), at the end of the formula or inside the numerator of its floor division. A
transposed convolution's length without its padding, a pooled length without `dilation * (k - 1)`'s
dilation, an output padding forgotten: one class, whatever the operator. The shape gap (expected minus got)
drops the terms whose known value cannot close it.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _assignments,
    _dotted,
    _expr,
    _kernels,
    _names,
    _params,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.conv_spec import _apply

_ALLOCATORS = {"empty", "zeros", "ones", "full", "new_empty", "new_zeros", "new_ones", "new_full", "randn"}
_TENSOR_USES = {"shape", "size", "stride", "contiguous", "view", "reshape", "dtype", "device", "numel", "dim"}
_ARITHMETIC = (cst.Add, cst.Subtract, cst.FloorDivide, cst.Multiply)


def shape_gaps(context: RuleContext | None) -> set[int]:
    """Expected minus got, for every axis of every output whose rank is right and whose size is not."""
    crash = context.crash if context is not None else {}
    if crash.get("class") != "output_allocation":
        return set()
    gaps: set[int] = set()
    for want, got in zip(crash.get("expected") or [], crash.get("got") or [], strict=False):
        a, b = want.get("shape") or [], got.get("shape") or []
        if len(a) == len(b):
            gaps |= {x - y for x, y in zip(a, b, strict=True) if x != y}
    return gaps


def _allocated_names(fn: cst.FunctionDef) -> set[str]:
    """Names a function passes as sizes to a tensor allocation (`torch.empty(B, L_out)`, `x.new_zeros`)."""
    out: set[str] = set()
    for call in m.findall(fn.body, m.Call()):
        assert isinstance(call, cst.Call)
        short = (_dotted(call.func) or "").rpartition(".")[2]
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _ALLOCATORS:
            short = call.func.attr.value
        if short in _ALLOCATORS:
            for arg in call.args:
                if arg.keyword is None:
                    out |= _names(arg.value)
    return out


def _sites(fn: cst.FunctionDef) -> list[tuple[str, cst.BinaryOperation]]:
    """(target, formula) of each size a function allocates its output with and computes by arithmetic."""
    allocated = _allocated_names(fn)
    sites = []
    for node in m.findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        target = node.targets[0].target if len(node.targets) == 1 else None
        value = node.value
        if (
            isinstance(target, cst.Name)
            and target.value in allocated
            and isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, _ARITHMETIC)
        ):
            sites.append((target.value, value))
    return sites


def _attribute_values(module: cst.Module, context: RuleContext | None) -> dict[str, int | None]:
    """`self.<attr>` set in an `__init__` to a parameter or an integer: its value when known."""
    params = context.init_params() if context is not None else {}
    out: dict[str, int | None] = {}
    for fn in m.findall(module, m.FunctionDef(name=m.Name("__init__"))):
        assert isinstance(fn, cst.FunctionDef)
        for node in m.findall(fn.body, m.Assign()):
            assert isinstance(node, cst.Assign)
            target = node.targets[0].target if len(node.targets) == 1 else None
            if not (
                m.matches(target, m.Attribute(value=m.Name("self"))) and isinstance(target, cst.Attribute)
            ):
                continue
            value = node.value
            if isinstance(value, cst.Integer):
                out[target.attr.value] = int(value.value)
            elif isinstance(value, cst.Name):
                known = params.get(value.value)
                out[target.attr.value] = (
                    known if isinstance(known, int) and not isinstance(known, bool) else None
                )
    return out


def _terms(module: cst.Module, fn: cst.FunctionDef, context: RuleContext | None) -> dict[str, int | None]:
    """Integer-like names a size formula could be missing, with their values where known: the module's
    attributes, the function's parameters (not its tensors) and locals set to an integer or an attribute."""
    attributes = _attribute_values(module, context)
    terms: dict[str, int | None] = {f"self.{name}": value for name, value in attributes.items()}
    tensors = {
        _render(node.value)
        for node in m.findall(fn.body, m.Attribute())
        if isinstance(node, cst.Attribute) and node.attr.value in _TENSOR_USES
    }
    for param in _params(fn):
        name = param.name.value
        if name not in ("self", "cls") and name not in tensors:
            terms.setdefault(name, None)
    for targets, value in _assignments(fn.body):
        if len(targets) != 1:
            continue
        (name,) = targets
        if isinstance(value, cst.Integer):
            terms[name] = int(value.value)
        elif m.matches(value, m.Attribute(value=m.Name("self"))) and isinstance(value, cst.Attribute):
            terms[name] = attributes.get(value.attr.value)
    return {name: value for name, value in terms.items() if name not in tensors}


@rule("edit_size_term", title="a term a size formula is missing", bug_class="edit:size_term", per="module",
      guarded=True)  # fmt: skip
def edit_size_term(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """An output of the wrong shape: its size formula gains or loses `t` or `2 * t`, at the end or in the
    numerator of its floor division; with several such sizes (H and W), also all of them alike."""
    gaps = shape_gaps(context)
    if not gaps:
        return
    kernels = set(_kernels(tree.module))
    for fn in m.findall(tree.module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        sites = _sites(fn) if fn not in kernels else []
        if not sites:
            continue
        for name, value in _terms(tree.module, fn, context).items():
            if name in {target for target, _ in sites}:
                continue
            for factor, sign in ((1, "+"), (1, "-"), (2, "+"), (2, "-")):
                change = None if value is None else value * factor * (1 if sign == "+" else -1)
                if change == 0:
                    continue
                term = name if factor == 1 else f"{factor} * {name}"
                # At the end the term moves the size by its value: a known value must close a gap. Inside a
                # floor division's numerator it moves it by value / divisor: the sign must be right.
                places: list[tuple[str, dict[cst.CSTNode, cst.CSTNode]]] = []
                if change is None or change in gaps:
                    places.append(("end", {f: _expr(f"{_render(f)} {sign} {term}") for _, f in sites}))
                if change is None or any(g * change > 0 for g in gaps):
                    inner: dict[cst.CSTNode, cst.CSTNode] = {}
                    for _, formula in sites:
                        for d in m.findall(formula, m.BinaryOperation(operator=m.FloorDivide())):
                            assert isinstance(d, cst.BinaryOperation)
                            inner.setdefault(
                                d, d.with_changes(left=_expr(f"({_render(d.left)} {sign} {term})"))
                            )
                    if inner:
                        places.append(("numerator", inner))
                for where, mapping in places:
                    for old, new in mapping.items():
                        what = f"{fn.name.value}: {tree.code(old)} -> {_render(new)}"
                        yield tree.edit(old, new, what)
                    if len(mapping) > 1:  # twins (H and W) share the mistake
                        first = min(mapping, key=tree.line)
                        what = f"{fn.name.value}: every output size {sign} {term} ({where})"
                        yield Edit(_apply(tree, replace=mapping), tree.line(first), what)


RULES = rules_of(__name__)
