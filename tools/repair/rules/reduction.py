"""Reduction rules: a stable logsumexp, neutral initialisers of running reductions, masked softmax scores.

Each rule finds its bug from the kernel's structure (which call feeds which, which name a loop carries),
never from its variable names, and offers a few small edits; the repair search screens them. The divisor
rules of reductions (biased or unbiased variance, a sum or a mean) are normalisation rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    _NEUTRAL,
    Edit,
    RuleContext,
    Tree,
    _after_docstring,
    _arg,
    _assignments,
    _calls,
    _dotted,
    _expr,
    _feeds,
    _is_inf,
    _is_number,
    _kernels,
    _mask_names,
    _names,
    _params,
    _paren,
    _render,
    _scalar_params,
    _values_of,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.compose import _ancestors, _edit, _statement, _wrapped
from kernel_medic.tools.repair.rules.cst_find import findall


def _fresh(fn: cst.FunctionDef, base: str) -> str:
    """`base`, or `base_2`, ... : a name the kernel does not use yet."""
    used = _names(fn) | {p.name.value for p in _params(fn)}
    name, i = base, 2
    while name in used:
        name, i = f"{base}_{i}", i + 1
    return name


def _needs_parens(tree: Tree, node: cst.CSTNode) -> bool:
    return isinstance(
        tree.parent(node),
        cst.BinaryOperation | cst.UnaryOperation | cst.Attribute | cst.Subscript | cst.Comparison,
    )


# ---------------------------------------------------------------- logsumexp_shift

_EXP_LOG = {
    "tl.exp": "tl.log",
    "tl.math.exp": "tl.math.log",
    "tl.exp2": "tl.log2",
    "tl.math.exp2": "tl.math.log2",
}


def _is_shifted(
    expr: cst.BaseExpression, values: dict[str, list[cst.BaseExpression]], depth: int = 3
) -> bool:
    """`x - m` (a subtraction of anything, written here or assigned to the name used) is already shifted."""
    while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply | cst.Divide):
        expr = expr.left
    if isinstance(expr, cst.Name) and depth > 0:
        return any(_is_shifted(v, values, depth - 1) for v in values.get(expr.value, []))
    return isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract)


def _sum_of_exp(
    expr: cst.BaseExpression, values: dict[str, list[cst.BaseExpression]]
) -> tuple[cst.Call, cst.Call, str] | None:
    """(tl.sum call, tl.exp call, exp name) when `expr` is `tl.sum(tl.exp(x), axis=a)` with x unshifted,
    the exp written inline or assigned once to the name summed."""
    if not (isinstance(expr, cst.Call) and _dotted(expr.func) == "tl.sum" and expr.args):
        return None
    inner = expr.args[0].value
    if isinstance(inner, cst.Name) and len(values.get(inner.value, [])) == 1:
        inner = values[inner.value][0]
    if not (isinstance(inner, cst.Call) and _dotted(inner.func) in _EXP_LOG and inner.args):
        return None
    if _is_shifted(inner.args[0].value, values):
        return None
    return expr, inner, _dotted(inner.func) or ""


def _two_d(fn: cst.FunctionDef, expr: cst.BaseExpression) -> bool:
    """`expr` is a 2-D tile: something it is computed from broadcasts a vector over two axes."""
    values = _values_of(fn)
    todo, seen = [expr], set()
    while todo:
        node = todo.pop()
        for sub in findall(node, m.Subscript()):
            if isinstance(sub, cst.Subscript) and _subscript_axes(sub) in ("N:", ":N"):
                return True
        for name in _names(node) - seen:
            seen.add(name)
            todo.extend(values.get(name, []))
    return False


def _expansion(fn: cst.FunctionDef, x: cst.BaseExpression, axis: cst.Arg | None) -> str:
    """How a row statistic of `x` broadcasts back against it: `[:, None]` after reducing axis 1 of a tile."""
    # Axis 0 is nearly always a 1-D row reduced to a scalar; a column reduction of a tile is rare.
    if axis is None or _is_number(axis.value, 0) or not _two_d(fn, x):
        return ""
    return "[:, None]"


@rule(
    "logsumexp_shift",
    title="log(sum(exp(x))) subtracts the max first and adds it back after the log",
    bug_class="numerical_stability",
    symptoms=("x100", "grows_with_magnitude", "inf", "nan", "rows", "scattered", "heavy_tailed"),
)
def logsumexp_shift(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """log(sum(exp(x))) overflows once x passes ~88: compute max(x) + log(sum(exp(x - max(x))))."""
    values = _values_of(fn)
    for log in _calls(fn.body, *set(_EXP_LOG.values())):
        if not log.args:
            continue
        arg = log.args[0].value
        found = _sum_of_exp(arg, values)
        if found is None and isinstance(arg, cst.Name) and len(values.get(arg.value, [])) == 1:
            found = _sum_of_exp(values[arg.value][0], values)
        if found is None:
            # The running form: `s += tl.sum(tl.exp(x))` in a loop, then `tl.log(s)` after it.
            if isinstance(arg, cst.Name):
                edit = _online_logsumexp(tree, fn, log, arg.value)
                if edit is not None:
                    yield edit
            continue
        total, exp, exp_name = found
        if _EXP_LOG[exp_name] != _dotted(log.func):
            continue
        x = exp.args[0].value
        axis = _arg(total, "axis", 1)
        axis_code = f", axis={_render(axis.value)}" if axis is not None else ""
        mx = _fresh(fn, f"{x.value}_max" if isinstance(x, cst.Name) else "row_max")
        stmt = _statement(tree, exp)
        if stmt is None:
            continue
        wrap = _needs_parens(tree, log)

        def shift_log(node: cst.CSTNode, mx: str = mx, wrap: bool = wrap) -> cst.CSTNode:
            new = cst.BinaryOperation(left=cst.Name(mx), operator=cst.Add(), right=node)  # type: ignore[arg-type]
            return _wrapped(new) if wrap else new

        expand = _expansion(fn, x, axis)

        def shift_exp(node: cst.CSTNode, mx: str = mx, expand: str = expand) -> cst.CSTNode:
            assert isinstance(node, cst.Call)
            shifted = _expr(f"{_render(node.args[0].value)} - {mx}{expand}")
            return node.with_changes(args=[node.args[0].with_changes(value=shifted), *node.args[1:]])

        new = _edit(
            tree,
            {log: shift_log, exp: shift_exp},
            before={stmt: [f"{mx} = tl.max({_render(x)}{axis_code})"]},
        )
        desc = f"{fn.name.value}: subtract the max before {exp_name} and add it back after the log"
        yield Edit(new, tree.line(stmt), desc)


def _online_logsumexp(tree: Tree, fn: cst.FunctionDef, log: cst.Call, acc: str) -> Edit | None:
    """`acc += tl.sum(tl.exp(x))` in a loop becomes a running max with a rescaled sum."""
    for loop in findall(fn.body, m.For() | m.While()):
        assert isinstance(loop, cst.For | cst.While)
        if loop in _ancestors(tree, log):
            continue
        for node in findall(loop.body, m.AugAssign(operator=m.AddAssign()) | m.Assign()):
            if isinstance(node, cst.AugAssign):
                if not (isinstance(node.target, cst.Name) and node.target.value == acc):
                    continue
                added = node.value
            else:
                assert isinstance(node, cst.Assign)
                value = node.value
                if not (
                    len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name)
                    and node.targets[0].target.value == acc
                    and isinstance(value, cst.BinaryOperation)
                    and isinstance(value.operator, cst.Add)
                    and isinstance(value.left, cst.Name)
                    and value.left.value == acc
                ):
                    continue
                added = value.right
            found = _sum_of_exp(added, _values_of(fn))
            if found is None or _EXP_LOG[found[2]] != _dotted(log.func):
                continue
            total, exp, exp_name = found
            init = _initialiser(tree, fn, loop, acc)
            if init is None:
                return None
            x = _render(exp.args[0].value)
            axis = _arg(total, "axis", 1)
            axis_code = f", axis={_render(axis.value)}" if axis is not None else ""
            expand = _expansion(fn, exp.args[0].value, axis)
            mx = _fresh(fn, f"{acc}_max")
            mx_new = _fresh(fn, f"{acc}_max_new")
            stmt = _statement(tree, node)
            if stmt is None:
                return None
            init_stmt, init_value = init
            wrap = _needs_parens(tree, log)

            def shift_log(node: cst.CSTNode, mx: str = mx, wrap: bool = wrap) -> cst.CSTNode:
                new = cst.BinaryOperation(left=cst.Name(mx), operator=cst.Add(), right=node)  # type: ignore[arg-type]
                return _wrapped(new) if wrap else new

            neg_inf = _neutral_initialiser(init_value, 'float("-inf")')
            if neg_inf is None:
                return None
            new = _edit(
                tree,
                {log: shift_log},
                before={stmt: [f"{mx_new} = tl.maximum({mx}, tl.max({x}{axis_code}))"]},
                after={
                    init_stmt: [f"{mx} = {_render(neg_inf)}"],
                    stmt: [
                        f"{acc} = {acc} * {exp_name}({mx} - {mx_new})"
                        f" + tl.sum({exp_name}({x} - {mx_new}{expand}){axis_code})",
                        f"{mx} = {mx_new}",
                    ],
                },
                drop={stmt},
            )
            desc = f"{fn.name.value}: running max for {acc}, rescaled sum, max added back after the log"
            return Edit(new, tree.line(stmt), desc)
    return None


# ---------------------------------------------------------------- neutral_init


def _initialiser(
    tree: Tree, fn: cst.FunctionDef, loop: cst.CSTNode, name: str
) -> tuple[cst.CSTNode, cst.BaseExpression] | None:
    """The statement and value that last assign `name` before `loop`, in a block enclosing the loop."""
    found: tuple[cst.CSTNode, cst.BaseExpression] | None = None
    enclosing = [a for a in _ancestors(tree, loop) if isinstance(a, cst.IndentedBlock)]
    loop_stmt = _statement(tree, loop)
    for block in enclosing:
        for stmt in block.body:
            if stmt is loop_stmt or loop_stmt in _ancestors(tree, stmt) or stmt in _ancestors(tree, loop):
                break
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (
                        isinstance(small, cst.Assign)
                        and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and small.targets[0].target.value == name
                    ):
                        found = (stmt, small.value)
        if found is not None:
            return found
    return None


def _is_zero_init(value: cst.BaseExpression) -> bool:
    if _is_number(value, 0):
        return True
    if isinstance(value, cst.Call) and _dotted(value.func) == "tl.zeros":
        return True
    if isinstance(value, cst.Call) and _dotted(value.func) == "tl.full":
        fill = _arg(value, "value", 1)
        return fill is not None and _is_number(fill.value, 0)
    return False


def _neutral_initialiser(value: cst.BaseExpression, neutral: str) -> cst.BaseExpression | None:
    """The zero initialiser `value` filled with `neutral` instead, keeping its shape and dtype."""
    if isinstance(value, cst.Integer | cst.Float | cst.UnaryOperation):
        if neutral == "1.0" and isinstance(value, cst.Integer):
            return _expr("1")
        return _expr(neutral)
    if not isinstance(value, cst.Call):
        return None
    if _dotted(value.func) == "tl.full":
        fill = _arg(value, "value", 1)
        if fill is None:
            return None
        return value.deep_replace(fill.value, _expr(neutral))  # type: ignore[return-value]
    shape = _arg(value, "shape", 0)
    dtype = _arg(value, "dtype", 1)
    if shape is None:
        return None
    dtype_code = _render(dtype.value) if dtype is not None else "tl.float32"
    return _expr(f"tl.full({_render(shape.value)}, {neutral}, dtype={dtype_code})")


def _update_kind(acc: str, value: cst.BaseExpression, op: cst.CSTNode | None) -> str | None:
    """How a loop statement updates `acc`: "max", "min", "mul", "add", or None when it does not read it."""
    if op is not None:
        if isinstance(op, cst.MultiplyAssign):
            return "mul"
        if isinstance(op, cst.AddAssign | cst.SubtractAssign):
            return "add"
        return None
    where = _where_kind(acc, value)
    if where is not None:
        return where
    for kind, names in (("max", ("tl.maximum", "tl.max")), ("min", ("tl.minimum", "tl.min"))):
        for call in _calls(value, *names):
            args = [a.value for a in call.args if a.keyword is None]
            if any(_is_number(a, 0) for a in args):
                return None  # a floor or ceiling at 0 is intended, not a neutral element
            if any(isinstance(a, cst.Name) and a.value == acc for a in args):
                return kind
    if isinstance(value, cst.BinaryOperation):
        if isinstance(value.operator, cst.Multiply) and any(
            isinstance(side, cst.Name) and side.value == acc for side in (value.left, value.right)
        ):
            return "mul"
        if isinstance(value.operator, cst.Add | cst.Subtract) and acc in _names(value):
            return "add"
    return None


def _where_kind(acc: str, value: cst.BaseExpression) -> str | None:
    """ "max" / "min" for `acc = tl.where(v > acc, v, acc)` and its mirrored spellings (a running argmax)."""
    if not (isinstance(value, cst.Call) and _dotted(value.func) == "tl.where" and len(value.args) == 3):
        return None
    cond, a, b = (arg.value for arg in value.args)
    is_acc = [isinstance(x, cst.Name) and x.value == acc for x in (a, b)]
    if is_acc[0] == is_acc[1] or not isinstance(cond, cst.Comparison) or len(cond.comparisons) != 1:
        return None
    left, op = cond.left, cond.comparisons[0].operator
    right = cond.comparisons[0].comparator
    greater = isinstance(op, cst.GreaterThan | cst.GreaterThanEqual)
    if not greater and not isinstance(op, cst.LessThan | cst.LessThanEqual):
        return None
    if isinstance(right, cst.Name) and right.value == acc:
        new_wins_if_larger = greater  # `v > acc`
    elif isinstance(left, cst.Name) and left.value == acc:
        new_wins_if_larger = not greater  # `acc < v`
    else:
        return None
    if is_acc[0]:  # the new value is taken when the condition fails
        new_wins_if_larger = not new_wins_if_larger
    return "max" if new_wins_if_larger else "min"


class _Substitute(cst.CSTTransformer):
    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        self.values = values

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return _paren(self.values[original.value]) if original.value in self.values else updated


def _inline_helper(tree: Tree, call: cst.BaseExpression) -> cst.BaseExpression | None:
    """What a call to a straight-line @triton.jit helper returns, in the caller's terms: `_combine(acc, v)`
    with `def _combine(a, b): return tl.maximum(a, b)` is `tl.maximum(acc, v)`. None for anything else
    (a helper with branches or loops, keywords, a different number of arguments)."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name):
        return None
    helper = next((k for k in _kernels(tree.module) if k.name.value == call.func.value), None)
    if helper is None or not isinstance(helper.body, cst.IndentedBlock):
        return None
    params = [p.name.value for p in _params(helper)]
    if len(call.args) != len(params) or any(a.keyword is not None or a.star for a in call.args):
        return None
    values: dict[str, cst.BaseExpression] = {p: a.value for p, a in zip(params, call.args, strict=True)}
    for stmt in helper.body.body[_after_docstring(helper.body) :]:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        small = stmt.body[0]
        if isinstance(small, cst.Return) and small.value is not None:
            return small.value.visit(_Substitute(values))  # type: ignore[return-value]
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
            return None
        target = small.targets[0].target
        if not isinstance(target, cst.Name):
            return None
        values[target.value] = small.value.visit(_Substitute(values))  # type: ignore[assignment]
    return None


_INIT_NEUTRAL = {"max": 'float("-inf")', "min": 'float("inf")', "mul": "1.0"}


@rule(
    "neutral_init",
    title="a loop-carried max/min/product starts at -inf/+inf/1, not 0",
    bug_class="neutral_element",
    symptoms=("all_negative", "all_positive", "rows", "everywhere", "zero_region", "trailing"),
)
def neutral_init(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A loop-carried max/min/product starts at 0: start it at -inf / +inf / 1."""
    done: set[int] = set()
    for loop in findall(fn.body, m.For() | m.While()):
        assert isinstance(loop, cst.For | cst.While)
        kinds: dict[str, set[str]] = {}
        in_loop = {n: vs for n, vs in _loop_values(loop).items()}
        for node in findall(loop.body, m.Assign() | m.AugAssign()):
            if isinstance(node, cst.Assign):
                if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
                    continue
                acc, value, op = node.targets[0].target.value, node.value, None
                # `m_new = tl.maximum(m, ...)` then `m = m_new`: follow one assignment back.
                if isinstance(value, cst.Name) and len(in_loop.get(value.value, [])) == 1:
                    value = in_loop[value.value][0]
            else:
                assert isinstance(node, cst.AugAssign)
                if not isinstance(node.target, cst.Name):
                    continue
                acc, value, op = node.target.value, node.value, node.operator
            # A running max kept by a helper (`running = _max_combine(running, vals)`) is one too.
            kind = _update_kind(acc, _inline_helper(tree, value) or value, op)
            if kind is not None:
                kinds.setdefault(acc, set()).add(kind)
        for acc, found in kinds.items():
            if len(found) != 1 or "add" in found:
                continue  # a product that is also added to is a rescaled sum (online softmax)
            kind = next(iter(found))
            init = _initialiser(tree, fn, loop, acc)
            if init is None or id(init[1]) in done or not _is_zero_init(init[1]):
                continue
            done.add(id(init[1]))
            neutral = _neutral_initialiser(init[1], _INIT_NEUTRAL[kind])
            if neutral is None:
                continue
            new = tree.replace(init[1], neutral)
            what = f"{fn.name.value}: {acc} carries a running {kind}, start it at {_INIT_NEUTRAL[kind]}"
            yield Edit(new, tree.line(init[1]), what)


def _loop_values(loop: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
    out: dict[str, list[cst.BaseExpression]] = {}
    for targets, value in _assignments(loop):
        for t in targets:
            out.setdefault(t, []).append(value)
    return out


# ---------------------------------------------------------------- mask_scores


def _subscript_axes(node: cst.Subscript) -> str:
    """ "N:" for `x[None, :]`, ":N" for `x[:, None]`, "" otherwise."""
    parts = []
    for el in node.slice:
        if (
            isinstance(el.slice, cst.Index)
            and isinstance(el.slice.value, cst.Name)
            and el.slice.value.value == "None"
        ):
            parts.append("N")
        elif isinstance(el.slice, cst.Slice):
            parts.append(":")
        else:
            return ""
    return "".join(parts)


def _arange_length(value: cst.BaseExpression) -> str | None:
    if isinstance(value, cst.Call) and _dotted(value.func) == "tl.arange" and len(value.args) == 2:
        if _is_number(value.args[0].value, 0):
            return _render(value.args[1].value)
    return None


def _key_offsets(fn: cst.FunctionDef, scope: cst.CSTNode) -> list[str]:
    """Expressions for the key offsets of a score tile: in a key loop, the loop's offsets vector (a name
    assigned in the loop and broadcast over a tile axis, else `start + arange` for an arange of the loop's
    step); without a loop, the kernel's aranges broadcast over a tile axis."""
    values = _values_of(fn)
    broadcast = [
        sub.value.value
        for sub in findall(scope, m.Subscript(value=m.Name()))
        if isinstance(sub, cst.Subscript)
        and isinstance(sub.value, cst.Name)
        and _subscript_axes(sub) in ("N:", ":N")
    ]
    out: list[str] = []
    if not isinstance(scope, cst.For | cst.While):
        for name in broadcast:
            if len(values.get(name, [])) == 1 and _calls(values[name][0], "tl.arange") and name not in out:
                out.append(name)
        return out
    local = _loop_values(scope)
    var = scope.target.value if isinstance(scope, cst.For) and isinstance(scope.target, cst.Name) else None
    for name in broadcast:
        vs = local.get(name, [])
        if len(vs) == 1 and (var in _names(vs[0]) or _calls(vs[0], "tl.arange")) and name not in out:
            out.append(name)
    if out or not isinstance(scope, cst.For) or var is None:
        return out
    it = scope.iter
    if isinstance(it, cst.Call) and _dotted(it.func) in ("range", "tl.range") and len(it.args) >= 3:
        step = _render(it.args[2].value)
        for name, vs in values.items():
            if len(vs) == 1 and _arange_length(vs[0]) == step:
                out.append(f"({var} + {name})")
    return out


@rule(
    "mask_scores",
    title="scores of out-of-range keys are -inf before the softmax",
    bug_class="tail_mask",
    symptoms=("shape", "tail_block", "rows", "everywhere", "constant_ratio"),
)
def mask_scores(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Scores of keys past the sequence end must be -inf before the softmax, or they take part in it."""
    runtime, _ = _scalar_params(fn)
    for dot in _calls(fn.body, "tl.dot"):
        assign = tree.parent(dot)
        while assign is not None and not isinstance(assign, cst.Assign):
            assign = tree.parent(assign)
        if not (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
        ):
            continue
        s = assign.targets[0].target.value
        loops = [a for a in _ancestors(tree, dot) if isinstance(a, cst.For | cst.While)]
        scope: cst.CSTNode = loops[0] if loops else fn.body
        stmt = _statement(tree, assign)
        block = tree.parent(stmt) if stmt is not None else None
        if stmt is None or not isinstance(block, cst.IndentedBlock):
            continue
        at = next(i for i, b in enumerate(block.body) if b is stmt)
        # Skip past `s = s * scale` / `s *= scale`, stop at the first softmax use.
        last, fed = stmt, False
        for later in block.body[at + 1 :]:
            if _calls(later, "tl.max", "tl.exp", "tl.exp2", "tl.math.exp", "tl.math.exp2", "tl.maximum") and (
                s in _names(later)
            ):
                fed = any(
                    s in _names(c)
                    for c in _calls(later, "tl.max", "tl.exp", "tl.exp2", "tl.math.exp", "tl.math.exp2")
                )
                break
            targets = set().union(*(t for t, _ in _assignments(later)))
            if s in targets:
                if _calls(later, "tl.where"):
                    last = None  # already masked
                    break
                last = later
        if not fed or last is None:
            continue
        if any(s in _names(w) for w in _calls(scope, "tl.where")):
            continue
        offsets = _key_offsets(fn, scope)
        for offs in offsets:
            bare = offs.strip("()")
            lengths = [
                p
                for p in runtime
                if any(
                    re.search(rf"\b{re.escape(bare.split(' + ')[-1])}\b.*<\s*{p}\b", _render(c))
                    for c in findall(fn.body, m.Comparison())
                )
            ] or runtime
            for length in lengths[:6]:
                line = f'{s} = tl.where({offs}[None, :] < {length}, {s}, float("-inf"))'
                new = _edit(tree, {}, after={last: [line]})
                desc = f"{fn.name.value}: keys past {length} get -inf scores before the softmax"
                yield Edit(new, tree.line(last, end=True), desc)


# ---------------------------------------------------------------- mask_reduced_operand

_FOLD_NEUTRAL = {"tl.sum": "0.0", **{f"tl.{kind}": value for kind, value in _NEUTRAL.items()}}


def _load_chain(expr: cst.BaseExpression) -> cst.Call | None:
    """The `tl.load` an expression only loads and casts (`tl.load(...).to(tl.float32)`), else None."""
    while isinstance(expr, cst.Call):
        if _dotted(expr.func) == "tl.load":
            return expr
        if not (isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "to"):
            return None
        expr = expr.func.value
    return None


def _pads_with(load: cst.Call, neutral: str) -> bool:
    other = _arg(load, "other", 2)
    if other is None:
        return False
    if neutral == "0.0":
        return _is_number(other.value, 0)
    return _is_inf(other.value, negative=neutral.startswith("-"))


def _masked_by(expr: cst.BaseExpression, masks: list[cst.BaseExpression]) -> bool:
    """A `tl.where` in `expr` already selects on one of the loads' masks. A `tl.where` on something else
    (`tl.where(is_nan, 0.0, 1.0)` counting valid entries) still gives padded lanes a value."""
    names = set().union(*(_names(mk) for mk in masks))
    for where in _calls(expr, "tl.where"):
        condition = _arg(where, "condition", 0)
        if condition is None or _names(condition.value) & names:
            return True
    return False


@rule(
    "mask_reduced_operand",
    title="padded lanes are masked out of what a reduction folds",
    bug_class="neutral_element",
    symptoms=("rows", "everywhere", "tail_block", "shape", "shifted_mean", "all_negative", "all_positive"),
)
def mask_reduced_operand(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A masked load's padded lanes still take part in a reduction: computed on (`x - mean` is `-mean`
    there), or padded with a value neutral for one reduction but not another (one `other=0.0` feeding
    both `tl.max` and `tl.min`). The reduction's operand is masked where it is folded, with the load's
    own mask and the reduction's neutral element; every such reduction of the kernel at once, and each
    alone."""
    values = _values_of(fn)
    loads = [(load, mask.value) for load in _calls(fn.body, "tl.load") if (mask := _arg(load, "mask", 1))]
    # A @triton.jit helper handed a mask computes on the lanes it masks: its result is padded like a load.
    helpers = [k.name.value for k in _kernels(tree.module) if k is not fn]
    masks = set(_mask_names(fn))
    loads += [
        (call, a.value)
        for call in _calls(fn.body, *helpers)
        for a in call.args
        if isinstance(a.value, cst.Name) and a.value.value in masks
    ]
    reaches = [(load, mask, _feeds(load, fn, tree)) for load, mask in loads]
    sites: list[tuple[cst.Call, cst.Arg, str, str]] = []
    for red in _calls(fn.body, *_FOLD_NEUTRAL):
        operand = _arg(red, "input", 0)
        if operand is None:
            continue
        neutral = _FOLD_NEUTRAL[_dotted(red.func) or ""]
        names = _names(operand.value)
        direct = _calls(operand.value, "tl.load", *helpers)
        feeding = [(ld, mk) for ld, mk, reach in reaches if reach & names or any(ld is d for d in direct)]
        if not feeding or _masked_by(operand.value, [mk for _, mk in feeding]):
            continue
        # A bare load padded with this reduction's own neutral element is already right.
        bare = _load_chain(operand.value)
        if bare is None and isinstance(operand.value, cst.Name):
            chains = [_load_chain(v) for v in values.get(operand.value.value, [])]
            bare = chains[0] if chains and all(c is not None for c in chains) else None
        if bare is not None and _pads_with(bare, neutral):
            continue
        # Each load's own mask: a tile's padded rows may be another load's mask than its padded columns.
        for mask in dict.fromkeys(_render(mk) for _, mk in feeding):
            sites.append((red, operand, mask, neutral))

    def masked(operand: cst.Arg, mask: str, neutral: str) -> cst.Arg:
        value = _render(operand.value.with_changes(lpar=[], rpar=[]))
        return operand.with_changes(value=_expr(f"tl.where({mask}, {value}, {neutral})"))

    firsts = list({id(op): (red, op, mk, nt) for red, op, mk, nt in reversed(sites)}.values())[::-1]
    if len(firsts) > 1:
        rebuild = {op: (lambda node, mk=mk, nt=nt: masked(node, mk, nt)) for _, op, mk, nt in firsts}
        what = f"{fn.name.value}: mask the padded lanes out of every reduction's operand"
        also = tuple(tree.line(r) for r, *_ in firsts[1:])
        yield Edit(_edit(tree, rebuild), tree.line(firsts[0][0]), what, also)
    for red, operand, mask, neutral in sites:
        what = f"{fn.name.value}: {_dotted(red.func)} folds tl.where({mask}, ..., {neutral})"
        yield tree.edit(operand, masked(operand, mask, neutral), what)

    # A loop that adds each block's terms into an accumulator folds them as a sum does, padded lanes
    # included (`acc += term` where the term is log(2) at x = y = 0): masked where they are added.
    for loop in findall(fn.body, m.For()):
        assert isinstance(loop, cst.For)
        in_loop = [(ld, mk, r) for ld, mk, r in reaches if any(a is loop for a in _ancestors(tree, ld))]
        for add in findall(loop.body, m.AugAssign(operator=m.AddAssign())):
            assert isinstance(add, cst.AugAssign)
            if _calls(add.value, "tl.sum", "tl.max", "tl.min"):
                continue
            names = _names(add.value)
            direct = _calls(add.value, "tl.load")
            feeding = [mk for ld, mk, reach in in_loop if reach & names or any(ld is d for d in direct)]
            if _masked_by(add.value, feeding):
                continue
            bare = _load_chain(add.value)
            if bare is None and isinstance(add.value, cst.Name):
                chains = [_load_chain(v) for v in values.get(add.value.value, [])]
                bare = chains[0] if chains and all(c is not None for c in chains) else None
            if bare is not None and _pads_with(bare, "0.0"):
                continue
            term = _render(add.value.with_changes(lpar=[], rpar=[]))
            for mask in dict.fromkeys(_render(mk) for mk in feeding):
                new = add.with_changes(value=_expr(f"tl.where({mask}, {term}, 0.0)"))
                yield tree.edit(
                    add, new, f"{fn.name.value}: {tree.code(add.target)} += tl.where({mask}, ..., 0.0)"
                )


RULES = rules_of(__name__)
