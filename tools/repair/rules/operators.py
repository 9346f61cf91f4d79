"""Operator definitions misread: activation forms, constructor constants, scans, pooling and loss counts."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    _EXP,
    Edit,
    RuleContext,
    Tree,
    _arg,
    _assignments,
    _calls,
    _dotted,
    _expr,
    _is_number,
    _literal_value,
    _names,
    _params,
    _paren,
    _render,
    _tensor_params,
    _values_of,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- operator formulas

_MODULES = {"tl", "triton", "math", "libdevice", "float", "torch", "self"}


def _vars(expr: cst.CSTNode) -> set[str]:
    return {n for n in _names(expr) if n not in _MODULES and not n.isupper()}


def _calls_ending(root: cst.CSTNode, suffix: str) -> list[cst.Call]:
    return [
        c
        for c in findall(root, m.Call())
        if isinstance(c, cst.Call) and (_dotted(c.func) or "").split(".")[-1] == suffix
    ]


_GELU_TANH = "{x} * tl.sigmoid(1.5957691216057308 * ({x} + 0.044715 * {x} * {x} * {x}))"
_GELU_ERF = "0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))"


@rule(
    "gelu_form",
    title="GELU erf vs tanh approximation, as the reference",
    bug_class="operator_misread",
    symptoms=("everywhere", "scattered", "x100"),
)
def gelu_form(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """GELU's exact erf form vs the tanh approximation (0.5x(1+tanh(z)) == x*sigmoid(2z))."""
    want_tanh = want_erf = True
    if context is not None and "gelu" in context.reference_source.lower():
        tanh = bool(re.search(r"approximate\s*=\s*['\"]tanh['\"]", context.reference_source))
        want_tanh, want_erf = tanh, not tanh
    values = _values_of(fn)
    returned = [r.value for r in findall(fn.body, m.Return()) if isinstance(r, cst.Return) and r.value]
    for value in [v for _, v in _assignments(fn.body)] + returned:
        erf = _calls_ending(value, "erf")
        # The tanh form may be spread over statements (`inner = c * (x + 0.044715 * x**3)`) and a helper
        # (`_tanh(inner)`): look one assignment deep and at helpers named after tanh.
        helpers = _calls_ending(value, "_tanh") + _calls_ending(value, "tanh")
        inner = [v for n in _names(value) for v in values.get(n, [])]
        is_tanh = bool(helpers) or any("0.044715" in _render(v) for v in [value, *inner])
        template = _GELU_TANH if erf and want_tanh else _GELU_ERF if is_tanh and want_erf else None
        if template is None:
            continue
        called = {
            c.func.value
            for c in findall(value, m.Call())
            if isinstance(c, cst.Call) and isinstance(c.func, cst.Name)
        }
        xs = _vars(erf[0].args[0].value if erf else value) - called
        # Intermediates computed from the input are not the input.
        xs = {x for x in xs if not any(_vars(v) & (xs - {x}) for v in values.get(x, []))}
        if len(xs) != 1:
            continue
        new = tree.replace(value, _expr(template.format(x=xs.pop())))
        what = f"{fn.name.value}: GELU in its {'tanh' if erf else 'erf'} form, as the reference"
        yield Edit(new, tree.line(value), what)


@rule(
    "silu_beta",
    title="Swish: beta inside the sigmoid",
    bug_class="operator_misread",
    symptoms=("everywhere", "scattered"),
)
def silu_beta(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Swish is x * sigmoid(beta * x): beta goes inside the sigmoid."""
    beta_value = None
    if context is not None:
        beta_value = next((v for k, v in context.init_params().items() if "beta" in k.lower()), None)
    used = _names(fn.body)
    betas = [p.name.value for p in _params(fn) if "beta" in p.name.value.lower() and p.name.value not in used]
    if not betas and isinstance(beta_value, int | float) and beta_value != 1:
        betas = [repr(float(beta_value))]
    for call in _calls_ending(fn.body, "sigmoid"):
        if not call.args or "beta" in _render(call.args[0].value).lower():
            continue
        arg = call.args[0].value
        for beta in betas:
            new = tree.replace(arg, _expr(f"{beta} * {_render(_paren(arg))}"))
            what = f"{fn.name.value}: sigmoid({beta} * ...), the Swish form"
            yield Edit(new, tree.line(arg), what)


def _float_literals(root: cst.CSTNode) -> list[cst.Float | cst.Integer]:
    return [n for n in findall(root, m.Float() | m.Integer()) if isinstance(n, cst.Float | cst.Integer)]


@rule(
    "constructor_constant",
    title="constant from the reference's constructor arguments, not the default",
    bug_class="operator_misread",
    symptoms=("everywhere", "scattered", "all_negative", "constant_ratio"),
)
def constructor_constant(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A literal equal to a constructor default where the reference is built with another value."""
    if context is None:
        return
    params = context.init_params()
    defaults = RuleContext(context.reference_source, ()).init_params()
    changed = {
        name: (defaults[name], value)
        for name, value in params.items()
        if name in defaults
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and isinstance(defaults[name], int | float)
        and value != defaults[name]
    }
    for lit in _float_literals(fn.body):
        value = _literal_value(lit)
        for name, (default, actual) in changed.items():
            if value is not None and value == float(default) and value not in (0.0, 1.0):
                new = tree.replace(lit, _expr(repr(actual)))
                what = f"{fn.name.value}: {lit.value} is {name}'s default; the model uses {actual!r}"
                yield Edit(new, tree.line(lit), what)


def _within_call(tree: Tree, node: cst.CSTNode, name: str) -> bool:
    parent = tree.parent(node)
    while parent is not None:
        if isinstance(parent, cst.Call) and _dotted(parent.func) == name:
            return True
        parent = tree.parent(parent)
    return False


@rule(
    "softplus_threshold",
    title="softplus returns x above its threshold",
    bug_class="numerical_stability",
    symptoms=("x100", "heavy_tailed", "scattered", "inf", "nan"),
)
def softplus_threshold(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """softplus returns x above the threshold (20 by default) instead of log(1 + exp(x))."""
    threshold = 20.0
    if context is not None:
        found = re.search(r"threshold\s*=\s*([0-9.]+)", context.reference_source)
        value = context.init_params().get("threshold")
        threshold = (
            float(value) if isinstance(value, int | float) else float(found.group(1)) if found else 20.0
        )
    for log in _calls(fn.body, "tl.log", "tl.math.log", "tl.log1p", "tl.math.log1p"):
        exps = _calls(log, *_EXP)
        if not exps or not exps[0].args or _within_call(tree, log, "tl.where"):
            continue
        x = _render(exps[0].args[0].value)
        wrapped = _expr(f"tl.where({x} > {threshold!r}, {x}, {tree.code(log)})")
        what = f"{fn.name.value}: softplus returns {x} above {threshold}"
        yield tree.edit(log, wrapped, what)


@rule(
    "scan_exclusive",
    title="inclusive vs exclusive prefix sum",
    bug_class="operator_misread",
    symptoms=("everywhere", "shifted", "constant_offset", "equals_input"),
    per="module",
)
def scan_exclusive(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Inclusive vs exclusive prefix sum: `cumsum(x)` <-> `cumsum(x) - x`."""
    for call in _calls(tree.module, "tl.cumsum"):
        if not call.args:
            continue
        x = _render(call.args[0].value)
        parent = tree.parent(call)
        if (
            isinstance(parent, cst.BinaryOperation)
            and isinstance(parent.operator, cst.Subtract)
            and parent.left is call
            and _render(parent.right) == x
        ):
            new = tree.replace(parent, call.with_changes(lpar=[], rpar=[]))
            yield Edit(new, tree.line(parent), f"inclusive scan: drop '- {x}'")
        else:
            new = tree.replace(call, _expr(f"({tree.code(call)} - {x})"))
            yield Edit(new, tree.line(call), f"exclusive scan: cumsum({x}) - {x}")


@rule(
    "conv_output_size",
    title="conv/pool output size (H + 2p - d(k-1) - 1) // s + 1",
    bug_class="operator_misread",
    symptoms=("shape_mismatch", "shape"),
    per="module",
)
def conv_output_size(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Output size of a conv/pool: (H + 2*p - d*(k-1) - 1) // s + 1, with the terms the code names."""
    for _, value in _assignments(tree.module):
        if not (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.Add)
            and _is_number(value.right, 1)
            and isinstance(value.left, cst.BinaryOperation)
            and isinstance(value.left.operator, cst.FloorDivide)
        ):
            continue
        numerator, stride = value.left.left, value.left.right
        leaves = [
            n
            for n in findall(numerator, m.Name() | m.Attribute() | m.Subscript())
            if isinstance(n, cst.Name | cst.Attribute | cst.Subscript)
        ]
        roles: dict[str, str] = {}
        for leaf in leaves:
            code = _render(leaf).strip("() ")
            last = re.split(r"[.\[]", code.lower().replace("self.", ""))[0 if "[" in code else -1]
            role = (
                "d"
                if "dil" in last
                else "p"
                if "pad" in last or last == "p"
                else "k"
                if "kernel" in last or last in ("k", "kh", "kw", "ks", "k_h", "k_w")
                else "h"
            )
            if role not in roles and code not in ("tl", "self"):
                roles[role] = code
        if "h" not in roles or "k" not in roles:
            continue
        h, k = roles["h"], roles["k"]
        pad = f" + 2 * {roles['p']}" if "p" in roles else ""
        dil = f"{roles['d']} * " if "d" in roles else ""
        canonical = f"({h}{pad} - {dil}({k} - 1) - 1) // {_render(_paren(stride))} + 1"
        if _render(value).replace(" ", "") == canonical.replace(" ", ""):
            continue
        new = tree.replace(value, _expr(canonical))
        yield Edit(new, tree.line(value), f"output size: {canonical}")


def _count_forms(x: str) -> list[str]:
    return [f"{x}.numel()", f"{x}.shape[0]", f"{x}.shape[-1]"]


@rule(
    "loss_mean_count",
    title="mean over the count the reference averages over",
    bug_class="operator_misread",
    symptoms=("constant_ratio", "everywhere"),
    per="forward",
)
def loss_mean_count(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A mean divides by the count the reference averages over: all elements vs the batch vs a row."""
    tensors = _tensor_params(fn)
    forms = [f for x in tensors for f in _count_forms(x)]
    for div in findall(fn.body, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        current = _render(div.right).replace("size(0)", "shape[0]").replace(" ", "")
        if current not in forms:
            continue
        for form in forms:
            if form != current:
                new = tree.replace(div.right, _expr(form))
                yield Edit(new, tree.line(div.right), f"mean over {form}")


# ---------------------------------------------------------------- pooling and losses


def _is_count_name(name: str) -> bool:
    low = name.lower()
    return "count" in low or "cnt" in low or low in ("n_valid", "valid_count", "num_valid")


def _is_count_divisor(expr: cst.BaseExpression) -> bool:
    """A count of valid taps, bare or kept from zero (`tl.maximum(cnt, 1.0)`)."""
    if isinstance(expr, cst.Name):
        return _is_count_name(expr.value)
    if isinstance(expr, cst.Call) and (_dotted(expr.func) or "").split(".")[-1] in ("maximum", "max"):
        return any(isinstance(a.value, cst.Name) and _is_count_name(a.value.value) for a in expr.args)
    return False


@rule(
    "count_include_pad",
    title="average pool divides by the window area or the valid count, as the reference",
    bug_class="operator_misread",
    symptoms=("tail_block", "rows", "columns", "leading", "trailing", "constant_ratio"),
)
def count_include_pad(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Average pooling divides by the window area (count_include_pad=True) or by the valid-element count."""
    want_area = want_count = True
    if context is not None and "count_include_pad" in context.reference_source:
        exclude = re.search(r"count_include_pad\s*=\s*False", context.reference_source) is not None
        exclude = exclude or context.init_params().get("count_include_pad") is False
        want_area, want_count = not exclude, exclude
    window = [
        p.name.value
        for p in _params(fn)
        if "kernel" in p.name.value.lower() or p.name.value in ("K", "KH", "KW")
    ]
    counts = [n for n in _values_of(fn) if _is_count_name(n)]
    area = (
        f"{window[0]} * {window[1]}" if len(window) >= 2 else f"{window[0]} * {window[0]}" if window else None
    )
    for div in findall(fn.body, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        divisor = _render(div.right).strip("() ")
        if _is_count_divisor(div.right) and area and want_area:
            new, what = tree.replace(div.right, _expr(f"({area})")), f"divide by the window area {area}"
        elif area and divisor.replace(" ", "") == area.replace(" ", "") and counts and want_count:
            new, what = (
                tree.replace(div.right, _expr(counts[0])),
                f"divide by the valid count {counts[0]}",
            )
        else:
            continue
        yield Edit(new, tree.line(div.right), f"{fn.name.value}: {what}")


def _ignore_value(fn: cst.FunctionDef, context: RuleContext | None) -> str | None:
    used = _names(fn.body)
    for p in _params(fn):
        if "ignore" in p.name.value.lower() and p.name.value not in used:
            return p.name.value
    if context is not None and "ignore_index" in context.reference_source:
        value = context.init_params().get("ignore_index")
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        found = re.search(r"ignore_index\s*=\s*(-?\d+)", context.reference_source)
        return found.group(1) if found else "-100"
    return None


@rule(
    "ignore_index",
    title="targets equal to ignore_index add no loss",
    bug_class="operator_misread",
    symptoms=("scattered", "everywhere", "constant_offset"),
)
def ignore_index(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Targets equal to ignore_index contribute nothing: zero their loss before it is stored or summed."""
    ignore = _ignore_value(fn, context)
    if ignore is None or f"!= {ignore}" in tree.code(fn) or f"== {ignore}" in tree.code(fn):
        return
    targets = [
        t
        for targets_, value in _assignments(fn.body)
        for load in _calls(value, "tl.load")
        if any(k in n.lower() for n in _names(load) for k in ("target", "label", "tgt"))
        for t in sorted(targets_)
    ]
    if not targets:
        return
    for call in _calls(fn.body, "tl.store", "tl.sum"):
        value = _arg(call, "value", 1) if _dotted(call.func) == "tl.store" else _arg(call, "input", 0)
        if value is None or targets[0] in _names(value.value) and _calls(value.value, "tl.load"):
            continue
        wrapped = _expr(f"tl.where({targets[0]} != {ignore}, {_render(value.value)}, 0.0)")
        what = f"{fn.name.value}: ignore targets equal to {ignore}"
        yield Edit(tree.replace(value.value, wrapped), tree.line(value), what)


# ---------------------------------------------------------------- floor_mod


@rule(
    "floor_mod",
    title="the reference's floor modulo, not Triton's truncating %",
    bug_class="operator_misread",
    symptoms=("all_negative", "scattered", "everywhere", "shifted_mean", "heavy_tailed"),
)
def floor_mod(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Triton's `%` truncates toward zero (C's fmod); `torch.remainder` and Python's `%` take the
    divisor's sign, so a negative operand comes out one divisor off. Offered where the reference takes
    a remainder: a nonzero result of the other sign than `b` moves by one `b` (adding `b` and taking `%`
    again would round a tiny negative result to 0 where the reference gets `b`)."""
    if context is None or not re.search(r"remainder|[^%\n]\s%\s", context.reference_source):
        return
    for node in findall(fn.body, m.BinaryOperation(operator=m.Modulo())):
        assert isinstance(node, cst.BinaryOperation)
        a, b = _render(_paren(node.left)), _render(_paren(node.right))
        what = f"{fn.name.value}: {a} % {b} as a floor modulo, as the reference's remainder"
        r = f"({a} % {b})"
        floored = f"tl.where(({r} != 0) & (({r} < 0) != ({b} < 0)), {r} + {b}, {r})"
        yield tree.edit(node, _expr(floored), what)


RULES = rules_of(__name__)
