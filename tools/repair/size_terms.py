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
    _all_calls,
    _assignments,
    _calls,
    _dotted,
    _expr,
    _kernels,
    _names,
    _params,
    _render,
    _tree,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.conv_spec import _apply
from kernel_medic.tools.repair.rules.cst_find import findall

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


def _allocation_args(fn: cst.FunctionDef) -> list[cst.BaseExpression]:
    """Sizes a function passes to a tensor allocation (`torch.empty(B, L_out)`, `x.new_zeros((B, L))`)."""
    out: list[cst.BaseExpression] = []
    for call in findall(fn.body, m.Call()):
        assert isinstance(call, cst.Call)
        short = (_dotted(call.func) or "").rpartition(".")[2]
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _ALLOCATORS:
            short = call.func.attr.value
        if short in _ALLOCATORS:
            for arg in call.args:
                if arg.keyword is None:
                    value = arg.value
                    items = value.elements if isinstance(value, cst.Tuple | cst.List) else [value]
                    out += [e.value if isinstance(e, cst.BaseElement) else e for e in items]
    return out


def _is_formula(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, _ARITHMETIC)


def _call_args(call: cst.Call, callee: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """The callee's parameter names bound to the call's argument expressions (`self.f(...)` skips self)."""
    params = [p.name.value for p in _params(callee)]
    if params and params[0] == "self" and isinstance(call.func, cst.Attribute):
        params = params[1:]
    bound: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            break
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
        elif i < len(params):
            bound[params[i]] = arg.value
    return bound


def _size_sites(module: cst.Module) -> dict[cst.FunctionDef, list[tuple[str | None, cst.BaseExpression]]]:
    """Per host function, (target, formula) of each size its output allocation is made with that it computes
    by arithmetic: assigned to a name, written in the allocation itself, or passed to the function that
    allocates (a launcher's `L_out` parameter). Names are followed back through plain assignments (a shape
    tuple) and from a callee's parameters into its callers."""
    kernels = set(_kernels(module))
    functions = [fn for fn in findall(module, m.FunctionDef()) if isinstance(fn, cst.FunctionDef)]
    hosts = [fn for fn in functions if fn not in kernels]
    by_name = {fn.name.value: fn for fn in hosts}
    inline: dict[cst.FunctionDef, list[cst.BaseExpression]] = {fn: _allocation_args(fn) for fn in hosts}
    sized: dict[cst.FunctionDef, set[str]] = {
        fn: set().union(*(_names(a) for a in args)) if args else set() for fn, args in inline.items()
    }
    calls = {fn: [c for c in findall(fn.body, m.Call()) if isinstance(c, cst.Call)] for fn in hosts}
    for _ in range(4):  # a fixpoint over short call chains
        changed = False
        for fn in hosts:
            before = len(sized[fn])
            for targets, value in _assignments(fn.body):
                if targets & sized[fn] and not _is_formula(value):
                    sized[fn] |= _names(value)
            for call in calls[fn]:
                callee = by_name.get((_dotted(call.func) or "").rpartition(".")[2])
                if callee is None or callee is fn or not sized[callee]:
                    continue
                for param, value in _call_args(call, callee).items():
                    if param in sized[callee]:
                        sized[fn] |= _names(value)
                        inline[fn].append(value)
            changed |= len(sized[fn]) != before
        if not changed:
            break
    sites: dict[cst.FunctionDef, list[tuple[str | None, cst.BaseExpression]]] = {}
    for fn in hosts:
        found: list[tuple[str | None, cst.BaseExpression]] = []
        for node in findall(fn.body, m.Assign()):
            assert isinstance(node, cst.Assign)
            for t, v in _unpacked(node):
                if isinstance(t, cst.Name) and t.value in sized[fn] and _is_formula(v):
                    found.append((t.value, v))
        found += [(None, v) for v in dict.fromkeys(inline[fn]) if _is_formula(v)]
        if found:
            sites[fn] = found
    return sites


def sizing_lines(source: str) -> set[int]:
    """Lines where the host computes an output's size or allocates it: an output of the wrong shape is fixed
    there, whatever the kernels do."""
    tree = _tree(source)
    if tree is None:
        return set()
    lines = {tree.line(formula) for sites in _size_sites(tree.module).values() for _, formula in sites}
    for fn in findall(tree.module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        lines |= {tree.line(size) for size in _allocation_args(fn)}
    return lines


def _attribute_values(module: cst.Module, context: RuleContext | None) -> dict[str, int | None]:
    """`self.<attr>` set in an `__init__` to a parameter or an integer: its value when known."""
    params = context.init_params() if context is not None else {}
    out: dict[str, int | None] = {}
    for fn in findall(module, m.FunctionDef(name=m.Name("__init__"))):
        assert isinstance(fn, cst.FunctionDef)
        for node in findall(fn.body, m.Assign()):
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


def _pointer_params(kernel: cst.FunctionDef) -> set[str]:
    """A kernel's parameters that are pointers: named so, or the base a load or store adds its offsets to."""
    out = {p.name.value for p in _params(kernel) if "ptr" in p.name.value.lower()}
    for call in _calls(kernel.body, "tl.load", "tl.store"):
        if not call.args:
            continue
        base = call.args[0].value
        while isinstance(base, cst.BinaryOperation) and isinstance(base.operator, cst.Add):
            base = base.left
        if isinstance(base, cst.Name):
            out.add(base.value)
    return out


def _launched_tensors(module: cst.Module, fn: cst.FunctionDef) -> set[str]:
    """Names `fn` hands a kernel launch where the kernel takes a pointer (a bias is a tensor, not a size)."""
    kernels = {k.name.value: k for k in _kernels(module)}
    out: set[str] = set()
    for _, call in _all_calls(fn.body):
        if not isinstance(call.func, cst.Subscript):
            continue
        kernel = kernels.get((_dotted(call.func.value) or "").rpartition(".")[2])
        if kernel is None:
            continue
        params = [p.name.value for p in _params(kernel)]
        pointers = _pointer_params(kernel)
        for i, arg in enumerate(call.args):
            param = arg.keyword.value if arg.keyword is not None else (params[i] if i < len(params) else None)
            if param in pointers:
                out |= _names(arg.value)
    return out


def _unpacked(node: cst.Assign) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(target, value) pairs of a single-target assignment, a tuple unpacked from a tuple pairwise."""
    if len(node.targets) != 1:
        return []
    target, value = node.targets[0].target, node.value
    if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple):
        if len(target.elements) != len(value.elements):
            return []
        return [(t.value, v.value) for t, v in zip(target.elements, value.elements, strict=True)]
    return [(target, value)]


def _rooted_at_self(value: cst.BaseExpression) -> bool:
    while isinstance(value, cst.Attribute | cst.Subscript):
        value = value.value
    return isinstance(value, cst.Name) and value.value == "self"


def _attribute_name(value: cst.BaseExpression) -> str | None:
    """The last attribute of `self.a.b[0]` (`b`)."""
    while isinstance(value, cst.Subscript):
        value = value.value
    return value.attr.value if isinstance(value, cst.Attribute) else None


def _terms(module: cst.Module, fn: cst.FunctionDef, context: RuleContext | None) -> dict[str, int | None]:
    """Integer-like names a size formula could be missing, with their values where known: the module's
    attributes, the function's parameters (not its tensors) and locals set to an integer or an attribute."""
    attributes = _attribute_values(module, context)
    terms: dict[str, int | None] = {f"self.{name}": value for name, value in attributes.items()}
    tensors = {
        _render(node.value)
        for node in findall(fn.body, m.Attribute())
        if isinstance(node, cst.Attribute) and node.attr.value in _TENSOR_USES
    } | _launched_tensors(module, fn)
    for param in _params(fn):
        name = param.name.value
        if name not in ("self", "cls") and name not in tensors:
            terms.setdefault(name, None)
    params = context.init_params() if context is not None else {}
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        for target, value in _unpacked(node):
            if not isinstance(target, cst.Name):
                continue
            if isinstance(value, cst.Integer):
                terms[target.value] = int(value.value)
            elif _rooted_at_self(value):
                # `self.padding`, `self.conv.padding[0]`: the constructor argument of that name, when known
                attr = _attribute_name(value)
                known = attributes.get(attr) if attr in attributes else params.get(attr or "")
                integer = isinstance(known, int) and not isinstance(known, bool)
                terms[target.value] = known if integer else None
    return {name: value for name, value in terms.items() if name not in tensors}


@rule("edit_size_term", title="a term a size formula is missing", bug_class="edit:size_term", per="module",
      guarded=True)  # fmt: skip
def edit_size_term(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """An output of the wrong shape: its size formula gains or loses `t` or `2 * t`, at the end or in the
    numerator of its floor division; with several such sizes (H and W), also all of them alike."""
    gaps = shape_gaps(context)
    if not gaps:
        return
    for fn, sites in _size_sites(tree.module).items():
        for name, value in _terms(tree.module, fn, context).items():
            if name in {target for target, _ in sites}:
                continue
            for factor, sign in ((1, "+"), (1, "-"), (2, "+"), (2, "-")):
                change = None if value is None else value * factor * (1 if sign == "+" else -1)
                if change == 0:
                    continue
                term = name if factor == 1 else f"{factor} * {name}"
                # At the end the term moves the size by its value: a known value must close a gap. Inside a
                # floor division's numerator it moves it by value / divisor: the sign must be right. A value
                # not known is still a size, a stride or a padding: not negative, so its sign must be right.
                direction = 1 if sign == "+" else -1
                signed = any(g * (change if change is not None else direction) > 0 for g in gaps)
                places: list[tuple[str, dict[cst.CSTNode, cst.CSTNode]]] = []
                if change in gaps or (change is None and signed):
                    places.append(("end", {f: _expr(f"{_render(f)} {sign} {term}") for _, f in sites}))
                if signed:
                    inner: dict[cst.CSTNode, cst.CSTNode] = {}
                    for _, formula in sites:
                        for d in findall(formula, m.BinaryOperation(operator=m.FloorDivide())):
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
