"""Neutral elements and numerical stability: padding values, eps, max subtraction, online softmax."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    _EXP,
    _NEUTRAL,
    Edit,
    RuleContext,
    Tree,
    _arg,
    _assignments,
    _calls,
    _dotted,
    _expr,
    _feeds,
    _for_loops,
    _helper_reads,
    _is_inf,
    _is_number,
    _names,
    _paren,
    _reachable,
    _render,
    _replace_many,
    _with_kwarg,
    rule,
    rules_of,
)

# ---------------------------------------------------------------- neutral_other_max

@rule(
    "neutral_other_max",
    title="masked load feeding tl.max/tl.min pads with the reduction's neutral element",
    bug_class="neutral_element",
    symptoms=("rows", "everywhere", "tail_block", "constant_ratio", "shape"),
)
def neutral_other_max(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    assigns = _assignments(fn.body)
    edges: dict[str, set[str]] = {}
    for targets, value in assigns:
        for name in _names(value):
            edges.setdefault(name, set()).update(targets)
    reducers: list[tuple[str, set[str], list[cst.Call]]] = []
    for red in _calls(fn.body, *_EXTREMA):
        first = _arg(red, "input", 0)
        if first is not None:
            kind = (_dotted(red.func) or "").removeprefix("tl.")
            reducers.append((kind, _names(first.value), _calls(first.value, "tl.load")))
    for name, names in _helper_reads(tree, fn, _EXTREMA):
        reducers.append((name.removeprefix("tl."), names, []))
    # Which reductions each load feeds: through assignments, or written straight into the reduction.
    feeds: dict[int, set[str]] = {}
    for targets, value in assigns:
        for load in _calls(value, "tl.load"):
            reach = set().union(*(_reachable(t, edges) for t in targets))
            feeds.setdefault(id(load), set()).update(k for k, names, _ in reducers if reach & names)
    for kind, _, direct in reducers:
        for load in direct:
            feeds.setdefault(id(load), set()).add(kind)
    changes: dict[str, list[tuple[cst.CSTNode, cst.CSTNode, int, str]]] = {}
    for load in _calls(fn.body, "tl.load"):
        for kind in sorted(feeds.get(id(load), ())):
            change = _pad_change(tree, load, _NEUTRAL[kind], lambda e: _is_number(e, 0))
            if change is not None:
                changes.setdefault(kind, []).append(change)
    for kind, found in changes.items():
        if len(found) > 1:  # two inputs reduced alike (a student's and a teacher's logits): pad them all
            new = _replace_many(tree.module, {old: new for old, new, _, _ in found})
            what = f"{fn.name.value}: every load feeding tl.{kind} pads with {_NEUTRAL[kind]}"
            yield Edit(new, found[0][2], what, tuple(line for *_, line, _ in found[1:]))
        for old, new, line, what in found:
            yield Edit(tree.replace(old, new), line, f"{fn.name.value}: {what} on the load feeding tl.{kind}")


def _pad_change(
    tree: Tree, load: cst.Call, neutral: str, wrong: Callable[[cst.BaseExpression], bool]
) -> tuple[cst.CSTNode, cst.CSTNode, int, str] | None:
    """(old node, new node, line, what) making the load pad its masked lanes with `neutral`: its wrong
    `other` replaced, or one added."""
    other = _arg(load, "other", 2)
    if other is not None and wrong(other.value):
        what = f"other={tree.code(other.value)} -> other={neutral}"
        return other.value, _expr(neutral), tree.line(other), what
    if other is None and _arg(load, "mask", 1) is not None:
        new = _with_kwarg(load, "other", neutral)
        return load, new, tree.line(load.args[-1], end=True), f"add other={neutral}"
    return None


def _pad(
    tree: Tree, load: cst.Call, neutral: str, wrong: Callable[[cst.BaseExpression], bool]
) -> tuple[cst.Module, int, str] | None:
    """The load padding its masked lanes with `neutral`: its wrong `other` replaced, or one added."""
    change = _pad_change(tree, load, neutral, wrong)
    if change is None:
        return None
    old, new, line, what = change
    return tree.replace(old, new), line, what


_SUM = ("tl.sum", "tl.cumsum", "tl.dot")


_EXTREMA = tuple(f"tl.{k}" for k in _NEUTRAL)


def _neutral_for(
    tree: Tree,
    fn: cst.FunctionDef,
    consumers: tuple[str, ...],
    avoid: tuple[str, ...],
    neutral: str,
    wrong: Callable[[cst.BaseExpression], bool],
) -> Iterator[Edit]:
    wanted = set().union(*(_names(c.args[0].value) for c in _calls(fn.body, *consumers) if c.args))
    wanted |= set().union(*(names for _, names in _helper_reads(tree, fn, consumers)))
    avoided = set().union(*(_names(c.args[0].value) for c in _calls(fn.body, *avoid) if c.args))
    avoided |= set().union(*(names for _, names in _helper_reads(tree, fn, avoid)))
    for load in _calls(fn.body, "tl.load"):
        reach = _feeds(load, fn, tree)
        if not reach & wanted or reach & avoided:
            continue
        padded = _pad(tree, load, neutral, wrong)
        if padded is not None:
            new, line, what = padded
            yield Edit(new, line, f"{fn.name.value}: {what} on the load feeding {consumers[0]}")


@rule(
    "neutral_other_exp",
    title="masked load feeding tl.exp pads with -inf",
    bug_class="neutral_element",
    symptoms=("rows", "everywhere", "constant_ratio", "shape", "tail_block"),
)
def neutral_other_exp(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    # Padded lanes that take part in exp must vanish: exp(-inf) = 0.
    yield from _neutral_for(tree, fn, _EXP, _EXTREMA, '-float("inf")', lambda e: not _is_inf(e, True))


@rule(
    "neutral_other_sum",
    title="masked load feeding a sum or dot pads with 0",
    bug_class="neutral_element",
    symptoms=("rows", "everywhere", "tail_block", "shape", "constant_offset"),
)
def neutral_other_sum(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    yield from _neutral_for(tree, fn, _SUM, _EXTREMA + _EXP, "0.0", lambda e: not _is_number(e, 0))


# ---------------------------------------------------------------- eps_inside_sqrt

_SQRT = ("tl.sqrt", "tl.math.sqrt", "tl.sqrt_rn")


def _is_eps(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer | cst.Float):
        return True
    name = _dotted(expr)
    return name is not None and "eps" in name.split(".")[-1].lower()


def _sqrt_plus_eps(expr: cst.BaseExpression) -> tuple[cst.Call, cst.BaseExpression] | None:
    """(sqrt call, eps) when `expr` is `sqrt(v) + eps` or `eps + sqrt(v)`."""
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add)):
        return None
    for a, b in ((expr.left, expr.right), (expr.right, expr.left)):
        if isinstance(a, cst.Call) and _dotted(a.func) in _SQRT and len(a.args) == 1 and _is_eps(b):
            return a, b
    return None


def _inner_sum(sqrt: cst.Call, eps: cst.BaseExpression) -> cst.BinaryOperation:
    v = sqrt.args[0].value
    # `v + eps` must still add eps to all of v: parenthesise v unless it binds at least as tightly as +.
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)
    arithmetic = cst.Add | cst.Subtract | cst.Multiply | cst.Divide | cst.FloorDivide | cst.Modulo | cst.Power
    tight = isinstance(v, atoms) or (
        isinstance(v, cst.BinaryOperation) and isinstance(v.operator, arithmetic)
    )
    if not v.lpar and not tight:
        v = v.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BinaryOperation(left=v, operator=cst.Add(), right=eps.with_changes(lpar=[], rpar=[]))


@rule(
    "eps_inside_sqrt",
    title="eps added under the square root, as the reference does",
    bug_class="numerical_stability",
    symptoms=("everywhere", "rows", "scattered"),
    per="module",
)
def eps_inside_sqrt(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    covered: set[int] = set()
    for div in m.findall(tree.module, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        found = _sqrt_plus_eps(div.right)
        if found is None or not _is_number(div.left, 1):
            continue
        covered.add(id(div.right))
        sqrt, eps = found
        prefix = (_dotted(sqrt.func) or "tl.sqrt").rsplit(".", 1)[0]
        call = cst.Call(
            func=cst.parse_expression(f"{prefix}.rsqrt"),
            args=[cst.Arg(_inner_sum(sqrt, eps))],
        )
        what = f"{tree.code(div)} -> {cst.Module([]).code_for_node(call)}"
        yield tree.edit(div, call, what)
    for add in m.findall(tree.module, m.BinaryOperation(operator=m.Add())):
        assert isinstance(add, cst.BinaryOperation)
        found = _sqrt_plus_eps(add)
        if found is None or id(add) in covered:
            continue
        sqrt, eps = found
        # A call needs no grouping parentheses, so `x / (sqrt(v) + eps)` becomes `x / sqrt(v + eps)`.
        call = sqrt.with_changes(args=[cst.Arg(_inner_sum(sqrt, eps))], lpar=[], rpar=[])
        what = f"{tree.code(add)} -> {cst.Module([]).code_for_node(call)}"
        yield tree.edit(add, call, what)


# ---------------------------------------------------------------- softmax_max_subtraction


def _axis_of(fn: cst.FunctionDef) -> str:
    """The reduction axis the kernel already uses (`axis=1` in `tl.sum(e, axis=1)`), else 0."""
    for call in _calls(fn.body, "tl.sum", "tl.max", "tl.min"):
        axis = _arg(call, "axis", 1)
        if axis is not None:
            return tree_code(axis.value)
    return "0"


def tree_code(node: cst.CSTNode) -> str:
    return _render(node)


@rule(
    "softmax_max_subtraction",
    title="subtract the row max before tl.exp (softmax, logsumexp)",
    bug_class="numerical_stability",
    symptoms=("x100", "heavy_tailed", "scattered", "rows", "nan", "inf"),
)
def softmax_max_subtraction(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """exp of raw logits overflows: subtract the row max first (softmax, logsumexp)."""
    if _calls(fn.body, "tl.max", "tl.maximum"):
        return
    axis = _axis_of(fn)
    for call in _calls(fn.body, *_EXP):
        arg = call.args[0].value if call.args else None
        if not isinstance(arg, cst.Name):
            continue
        x = arg.value
        found = tree.insert_before(call, f"{x} = {x} - tl.max({x}, axis={axis})")
        if found is not None:
            new, line = found
            desc = f"{fn.name.value}: subtract the max of {x} before tl.exp"
            yield Edit(new, line, desc)


# ---------------------------------------------------------------- online_softmax_rescale


@rule(
    "online_softmax_rescale",
    title="rescale the running sum/accumulator by exp(m_old - m_new)",
    bug_class="numerical_stability",
    symptoms=("everywhere", "rows", "shape", "grows_with_magnitude", "x100"),
)
def online_softmax_rescale(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """In an online softmax, the running sum/accumulator must be rescaled by exp(m_old - m_new)."""
    two_d = {
        t
        for targets, value in _assignments(fn.body)
        for call in _calls(value, "tl.zeros", "tl.full")
        if call.args
        and isinstance(call.args[0].value, cst.Tuple | cst.List)
        and len(call.args[0].value.elements) == 2  # type: ignore[union-attr]
        for t in targets
    }
    for loop in _for_loops(fn):
        running: tuple[str, str] | None = None  # (old max, new max)
        for node in m.findall(loop.body, m.Assign()):
            assert isinstance(node, cst.Assign)
            for call in _calls(node.value, "tl.maximum"):
                if call.args and isinstance(call.args[0].value, cst.Name) and len(node.targets) == 1:
                    target = node.targets[0].target
                    old = call.args[0].value.value
                    if isinstance(target, cst.Name) and target.value != old:
                        running = (old, target.value)
        if running is None:
            continue
        old, new_max = running
        rescaled = {
            n.target.value
            for n in m.findall(loop.body, m.AugAssign(operator=m.MultiplyAssign()))
            if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)
        }
        for node in m.findall(loop.body, m.Assign() | m.AugAssign()):
            if isinstance(node, cst.AugAssign):
                if not isinstance(node.operator, cst.AddAssign) or not isinstance(node.target, cst.Name):
                    continue
                acc, added = node.target.value, node.value
            else:
                assert isinstance(node, cst.Assign)
                value = node.value
                if not (
                    len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name)
                    and isinstance(value, cst.BinaryOperation)
                    and isinstance(value.operator, cst.Add)
                    and isinstance(value.left, cst.Name)
                    and value.left.value == node.targets[0].target.value  # type: ignore[union-attr]
                ):
                    continue
                acc, added = value.left.value, value.right
            if acc in (old, new_max) or acc in rescaled:
                continue
            alpha = f"tl.exp({old} - {new_max})" + ("[:, None]" if acc in two_d else "")
            stmt = cst.parse_statement(f"{acc} = {acc} * {alpha} + {_render(_paren(added))}\n")
            assert isinstance(stmt, cst.SimpleStatementLine)
            new = tree.replace(node, stmt.body[0])
            desc = f"{fn.name.value}: rescale {acc} by exp({old} - {new_max}) before adding"
            yield Edit(new, tree.line(node), desc)


RULES = rules_of(__name__)
