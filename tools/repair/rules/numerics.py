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
    _values_of,
    _with_kwarg,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

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
    for div in findall(tree.module, m.BinaryOperation(operator=m.Divide())):
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
    for add in findall(tree.module, m.BinaryOperation(operator=m.Add())):
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
        for node in findall(loop.body, m.Assign()):
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
        # The loop's own factor where it computes one (`alpha = tl.math.exp2(m_i - m_ij)`), else exp of the
        # difference in the base the loop exponentiates in.
        shift = f"{old} - {new_max}"
        named = [
            t
            for targets, value in _assignments(loop.body)
            if isinstance(value, cst.Call) and value.args and _render(value.args[0].value).strip() == shift
            and (_dotted(value.func) or "") in _EXP
            for t in sorted(targets)
        ]
        base2 = [c for c in _calls(loop.body, *_EXP) if "exp2" in (_dotted(c.func) or "")]
        factor = named[0] if named else f"{_dotted(base2[0].func) if base2 else 'tl.exp'}({shift})"
        assigned = {t for targets, _ in _assignments(fn.body) for t in targets}
        rescaled = {
            n.target.value
            for n in findall(loop.body, m.AugAssign(operator=m.MultiplyAssign()))
            if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)
        }
        for node in findall(loop.body, m.Assign() | m.AugAssign()):
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
            # A 2-D accumulator (a tile, or a helper's parameter a tl.dot is added to) scales by rows.
            if acc in two_d or _calls(added, "tl.dot"):
                shapes = ["[:, None]"]
            else:  # a name this function never assigns (a parameter) may be either
                shapes = [""] if acc in assigned else ["", "[:, None]"]
            for shape in shapes:
                alpha = factor + shape
                stmt = cst.parse_statement(f"{acc} = {acc} * {alpha} + {_render(_paren(added))}\n")
                assert isinstance(stmt, cst.SimpleStatementLine)
                new = tree.replace(node, stmt.body[0])
                desc = f"{fn.name.value}: rescale {acc} by {alpha} before adding"
                yield Edit(new, tree.line(node), desc)


# ---------------------------------------------------------------- stable_log_exp and stable_exp_ratio

_NATURAL_EXP = ("tl.exp", "tl.math.exp")


def _exp_term(expr: cst.BaseExpression, exps: dict[str, cst.BaseExpression]) -> cst.BaseExpression | None:
    """t when `expr` is exp(t): a call, or a name the function assigns exp(t) to once; None otherwise."""
    if isinstance(expr, cst.Call) and _dotted(expr.func) in _NATURAL_EXP and len(expr.args) == 1:
        return expr.args[0].value
    if isinstance(expr, cst.Name):
        return exps.get(expr.value)
    return None


def _single_exps(fn: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """Names assigned exactly once in `fn`, to exp(t): name -> t."""
    out: dict[str, cst.BaseExpression] = {}
    for name, values in _values_of(fn).items():
        if len(values) == 1:
            term = _exp_term(values[0], {})
            if term is not None:
                out[name] = term
    return out


def _addends_of(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) and not expr.lpar:
        return [*_addends_of(expr.left), *_addends_of(expr.right)]
    return [expr.with_changes(lpar=[], rpar=[]) if isinstance(expr, cst.BinaryOperation) else expr]


def _maxima(fn: cst.FunctionDef) -> set[str]:
    """Names assigned once in `fn`, to a maximum (tl.maximum, tl.max)."""
    return {
        name
        for name, values in _values_of(fn).items()
        if len(values) == 1 and _calls(values[0], "tl.maximum", "tl.max", "tl.math.max")
    }


def _non_positive(term: cst.BaseExpression, maxima: set[str]) -> bool:
    """Whether an exponent is visibly at most 0: `-tl.abs(z)`, or shifted by a maximum (`x - m`, `-m`): its
    exp cannot overflow."""
    if isinstance(term, cst.UnaryOperation) and isinstance(term.operator, cst.Minus):
        inner = term.expression
        if isinstance(inner, cst.Call) and _dotted(inner.func) in ("tl.abs", "tl.math.abs"):
            return True
        return isinstance(inner, cst.Name) and inner.value in maxima
    return (
        isinstance(term, cst.BinaryOperation)
        and isinstance(term.operator, cst.Subtract)
        and isinstance(term.right, cst.Name)
        and term.right.value in maxima
    )


@rule(
    "stable_log_exp",
    title="log of a sum of exps shifted by their max (logaddexp, softplus, logsumexp of a few terms)",
    bug_class="numerical_stability",
    symptoms=("x100", "heavy_tailed", "scattered", "inf", "nan"),
)
def stable_log_exp(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`log(exp(a) + exp(b) [+ 1])` overflows to inf once a term passes ~88: `m + log(sum exp(t - m))`
    with m the largest exponent (0 for a 1) is the same value, finite."""
    exps, maxima = _single_exps(fn), _maxima(fn)
    for log in _calls(fn.body, "tl.log", "tl.math.log"):
        if len(log.args) != 1:
            continue
        terms: list[str] = []
        for addend in _addends_of(log.args[0].value):
            exponent = _exp_term(addend, exps)
            if exponent is not None and not _non_positive(exponent, maxima):
                terms.append(_render(_paren(exponent)))
            elif _is_number(addend, 1):
                terms.append("0.0")
            else:
                terms = []
                break
        if len(terms) < 2 or all(t == "0.0" for t in terms):
            continue
        shift = terms[0]
        for t in terms[1:]:
            shift = f"tl.maximum({shift}, {t})"
        m_name = "_lse_max"
        found = tree.insert_before(log, f"{m_name} = {shift}")
        if found is None:
            continue
        # The log itself becomes the shifted form, in the module the insertion gave.
        shifted = " + ".join(f"tl.exp({t} - {m_name})" if t != "0.0" else f"tl.exp(-{m_name})" for t in terms)
        inserted = found[0] if isinstance(found[0], cst.Module) else cst.parse_module(found[0])
        target = _same_call(inserted, tree.code(log))
        if target is None:
            continue
        new = inserted.deep_replace(target, _expr(f"({m_name} + tl.log({shifted}))"))
        yield Edit(new, tree.line(log), f"{fn.name.value}: {tree.code(log)} shifted by the largest exponent")


def _same_call(module: cst.Module, code: str) -> cst.Call | None:
    """The one call in `module` whose code is `code` (None when there is not exactly one)."""
    found = [c for c in findall(module, m.Call()) if module.code_for_node(c) == code]
    return found[0] if len(found) == 1 else None  # type: ignore[return-value]


@rule(
    "stable_exp_ratio",
    title="tanh or sigmoid written as a ratio of exps, in a form that does not overflow",
    bug_class="numerical_stability",
    symptoms=("x100", "heavy_tailed", "scattered", "inf", "nan"),
)
def stable_exp_ratio(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`(e - 1) / (e + 1)` with e = exp(t) is inf / inf = nan once t passes ~88: `1 - 2 / (1 + e)` is the same
    value and tends to 1; `(e - f) / (e + f)` with f = exp(-t) is `1 - 2 / (1 + exp(2 t))`; a sigmoid
    `e / (1 + e)` is `1 / (1 + exp(-t))`."""
    exps, maxima = _single_exps(fn), _maxima(fn)
    for div in findall(fn.body, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        num, den = div.left, div.right
        sigmoid = _sigmoid_ratio(num, den, exps, maxima)
        if sigmoid is not None:
            yield tree.edit(div, _expr(sigmoid), f"{fn.name.value}: {tree.code(div)} as 1 / (1 + exp(-t))")
            continue
        if not (
            isinstance(num, cst.BinaryOperation)
            and isinstance(den, cst.BinaryOperation)
            and isinstance(num.operator, cst.Subtract)
            and isinstance(den.operator, cst.Add)
        ):
            continue
        same = _render(num.left) == _render(den.left) and _render(num.right) == _render(den.right)
        if not same:
            continue
        grows, other = _exp_term(num.left, exps), num.right
        if grows is None or _non_positive(grows, maxima):
            continue
        if _is_number(other, 1):
            replacement = f"(1.0 - 2.0 / (1.0 + {_render(num.left)}))"
        else:
            falls = _exp_term(other, exps)
            if falls is None:
                continue
            replacement = f"(1.0 - 2.0 / (1.0 + tl.exp({_render(_paren(grows))} - {_render(_paren(falls))})))"
        yield tree.edit(div, _expr(replacement), f"{fn.name.value}: {tree.code(div)} as 1 - 2 / (1 + e)")


def _sigmoid_ratio(
    num: cst.BaseExpression, den: cst.BaseExpression, exps: dict[str, cst.BaseExpression], maxima: set[str]
) -> str | None:
    """`1 / (1 + exp(-t))` for `e / (1 + e)` or `e / (e + 1)` with e = exp(t) that may overflow."""
    if not (isinstance(den, cst.BinaryOperation) and isinstance(den.operator, cst.Add)):
        return None
    sides = [_render(den.left), _render(den.right)]
    if _render(num) not in sides or not any(_is_number(x, 1) for x in (den.left, den.right)):
        return None
    grows = _exp_term(num, exps)
    if grows is None or _non_positive(grows, maxima):
        return None
    return f"(1.0 / (1.0 + tl.exp(-{_render(_paren(grows))})))"


def _sigmoid_of(
    expr: cst.BaseExpression, sigmoids: dict[str, cst.BaseExpression]
) -> cst.BaseExpression | None:
    """t when `expr` is sigmoid(t): `tl.sigmoid(t)`, `1 / (1 + exp(-t))`, or a name assigned one once."""
    if isinstance(expr, cst.Name):
        return sigmoids.get(expr.value)
    if isinstance(expr, cst.Call) and _dotted(expr.func) in ("tl.sigmoid", "tl.math.sigmoid") and expr.args:
        return expr.args[0].value
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide)):
        return None
    den = expr.right
    if not _is_number(expr.left, 1) or not (
        isinstance(den, cst.BinaryOperation) and isinstance(den.operator, cst.Add)
    ):
        return None
    for one, e in ((den.left, den.right), (den.right, den.left)):
        exponent = _exp_term(e, {})
        if _is_number(one, 1) and isinstance(exponent, cst.UnaryOperation):
            if isinstance(exponent.operator, cst.Minus):
                return exponent.expression
    return None


def _one_minus(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """p for `1 - p`."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract):
        if _is_number(expr.left, 1):
            return expr.right
    return None


@rule(
    "stable_log_sigmoid",
    title="log of a sigmoid (cross entropy from probabilities) as a softplus that does not reach log(0)",
    bug_class="numerical_stability",
    symptoms=("x100", "heavy_tailed", "scattered", "inf", "nan"),
)
def stable_log_sigmoid(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`log(p)` and `log(1 - p)` of p = sigmoid(t) are log(0) = -inf once |t| passes ~17 (a cross entropy of
    confident logits turns inf or nan): they are `-softplus(-t)` and `-softplus(t)`, finite, written as
    `-(max(∓t, 0) + log(1 + exp(-|t|)))`. Each log alone, and all together."""
    sigmoids: dict[str, cst.BaseExpression] = {}
    for name, values in _values_of(fn).items():
        t = _sigmoid_of(values[0], {}) if len(values) == 1 else None
        if t is not None:
            sigmoids[name] = t
    found: dict[cst.CSTNode, cst.BaseExpression] = {}
    for log in _calls(fn.body, "tl.log", "tl.math.log"):
        if len(log.args) != 1:
            continue
        arg = log.args[0].value
        rest = _one_minus(arg)
        t = _sigmoid_of(rest, sigmoids) if rest is not None else _sigmoid_of(arg, sigmoids)
        if t is None:
            continue
        x = _render(_paren(t))
        sign = "" if rest is not None else "-"
        found[log] = _expr(f"(-(tl.maximum({sign}{x}, 0.0) + tl.log(1.0 + tl.exp(-tl.abs({x})))))")
    if len(found) > 1:
        lines = tuple(tree.line(log) for log in found)
        new = _replace_many(tree.module, dict(found))
        yield Edit(new, lines[0], f"{fn.name.value}: every log of a sigmoid as a softplus", lines[1:])
    for log, stable in found.items():
        yield tree.edit(log, stable, f"{fn.name.value}: {tree.code(log)} as a softplus")


RULES = rules_of(__name__)
