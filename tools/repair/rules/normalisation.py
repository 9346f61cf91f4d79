"""Normalisation: divide by the true size, biased vs unbiased variance, padded lanes, affine step."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _arg,
    _calls,
    _dotted,
    _expr,
    _is_number,
    _kernels,
    _launches,
    _mask_names,
    _names,
    _params,
    _paren,
    _render,
    _scalar_params,
    _squares,
    _values_of,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.compose import _ancestors, _edit, _statement, _wrapped
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- divide_by_n_not_block


@rule(
    "divide_by_n_not_block",
    title="normalise by the true size, not the block size",
    bug_class="normalisation",
    symptoms=("everywhere", "rows", "constant_ratio", "shape"),
)
def divide_by_n_not_block(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    constexpr, sizes = set(), []
    names = set()
    for p in _params(fn):
        names.add(p.name.value)
        annotation = _dotted(p.annotation.annotation) if p.annotation else None
        if (annotation or "").split(".")[-1] == "constexpr":
            constexpr.add(p.name.value)
    for cmp in findall(fn.body, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        for side in (cmp.left, *(t.comparator for t in cmp.comparisons)):
            if isinstance(side, cst.Name) and side.value in names - constexpr and side.value not in sizes:
                sizes.append(side.value)
    divisors: list[cst.Name] = []
    for node in findall(
        fn.body, m.BinaryOperation(operator=m.Divide()) | m.AugAssign(operator=m.DivideAssign())
    ):
        divisor = node.right if isinstance(node, cst.BinaryOperation) else node.value  # type: ignore[union-attr]
        if isinstance(divisor, cst.Name) and divisor.value in constexpr:
            divisors.append(divisor)
    for divisor in divisors:
        for size in sizes:
            new = tree.replace(divisor, divisor.with_changes(value=size))
            desc = f"{fn.name.value}: divide by {size} (the true size), not the block size {divisor.value}"
            yield Edit(new, tree.line(divisor), desc)


@rule(
    "variance_bias",
    title="biased vs unbiased variance (/ N vs / (N - 1))",
    bug_class="normalisation",
    symptoms=("everywhere", "rows", "constant_ratio"),
    per="module",
)
def variance_bias(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Biased (`/ N`) vs unbiased (`/ (N - 1)`) variance: propose the other one."""
    for div in findall(tree.module, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        if not _calls(div.left, "tl.sum") and not findall(
            div.left, m.Call(func=m.Attribute(attr=m.Name("sum")))
        ):
            continue
        if not _squares(div.left):
            continue
        right = div.right
        if (
            isinstance(right, cst.BinaryOperation)
            and isinstance(right.operator, cst.Subtract)
            and _is_number(right.right, 1)
        ):
            new_right: cst.BaseExpression = right.left.with_changes(lpar=[], rpar=[])
            what = "biased variance: divide by N"
        elif isinstance(right, cst.Name | cst.Attribute | cst.Call):
            new_right = _expr(f"({_render(right)} - 1)")
            what = "unbiased variance: divide by N - 1"
        else:
            continue
        yield tree.edit(right, new_right, what)


# ---------------------------------------------------------------- mask_centered


@rule(
    "mask_centered",
    title="zero padded lanes of x - mean before the variance",
    bug_class="normalisation",
    symptoms=("everywhere", "rows", "shifted_mean", "shape", "tail_block"),
)
def mask_centered(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`x - mean` on padded lanes adds mean**2 per padded lane to the variance: zero them first."""
    masks = _mask_names(fn)
    if not masks:
        return
    values = _values_of(fn)
    means = {n for n, vs in values.items() if any(_calls(v, "tl.sum") for v in vs)}
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        value = node.value
        if not (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.Subtract)
            and isinstance(value.right, cst.Name)
            and value.right.value in means
        ):
            continue
        mask = masks[0]
        if isinstance(value.left, cst.Name):
            for v in values.get(value.left.value, []):
                for load in _calls(v, "tl.load"):
                    arg = _arg(load, "mask", 1)
                    if arg is not None and isinstance(arg.value, cst.Name):
                        mask = arg.value.value
        wrapped = _expr(f"tl.where({mask}, {_render(value.with_changes(lpar=[], rpar=[]))}, 0.0)")
        desc = f"{fn.name.value}: zero the padded lanes of {_render(value)} before reducing"
        yield tree.edit(value, wrapped, desc)


# ---------------------------------------------------------------- affine_weight_bias

_WEIGHT = {"w", "weight", "gamma", "scale", "g"}
_BIAS = {"b", "bias", "beta", "shift"}


def _role(param: str) -> str | None:
    stem = param.lower().removesuffix("_ptr").removesuffix("ptr").rstrip("_")
    return "weight" if stem in _WEIGHT else "bias" if stem in _BIAS else None


@rule(
    "affine_weight_bias",
    title="apply the affine weight/bias the kernel receives",
    bug_class="normalisation",
    symptoms=("everywhere", "rows", "columns", "constant_offset"),
    per="module",
)
def affine_weight_bias(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    for fn in _kernels(tree.module):
        yield from _affine_on_store(tree, fn)
    yield from _affine_launch_args(tree)


def _affine_on_store(tree: Tree, fn: cst.FunctionDef) -> Iterator[Edit]:
    """The kernel receives weight/bias pointers but never loads them: apply the affine step on the store."""
    used = _names(fn.body)
    unused = {_role(p.name.value): p.name.value for p in _params(fn) if p.name.value not in used}
    unused.pop(None, None)
    if not unused:
        return
    values = _values_of(fn)
    for store in _calls(fn.body, "tl.store"):
        value, mask = _arg(store, "value", 1), _arg(store, "mask", 2)
        if value is None or mask is None or not isinstance(mask.value, cst.Name):
            continue
        cmp = next((v for v in values.get(mask.value.value, []) if isinstance(v, cst.Comparison)), None)
        if cmp is None or not isinstance(cmp.left, cst.Name):
            continue
        cols, mask_name = cmp.left.value, mask.value.value
        code = _render(
            _paren(value.value.with_changes(lpar=[], rpar=[])) if "weight" in unused else value.value
        )
        if "weight" in unused:
            code = f"{code} * tl.load({unused['weight']} + {cols}, mask={mask_name}, other=0.0)"
        if "bias" in unused:
            code = f"{code} + tl.load({unused['bias']} + {cols}, mask={mask_name}, other=0.0)"
        new = tree.replace(value.value, _expr(code))
        desc = f"{fn.name.value}: apply the unused {' and '.join(sorted(unused))} on the store"
        yield Edit(new, tree.line(value), desc)


def _affine_launch_args(tree: Tree) -> Iterator[Edit]:
    """The wrapper passes None where the kernel expects the module's weight or bias."""
    kernels = {fn.name.value: [p.name.value for p in _params(fn)] for fn in _kernels(tree.module)}
    attributes: dict[str, str] = {}
    for cls in findall(tree.module, m.ClassDef(name=m.Name("ModelNew"))):
        for target in findall(cls, m.Attribute(value=m.Name("self"))):
            assert isinstance(target, cst.Attribute)
            role = _role(target.attr.value)
            if role is not None:
                attributes.setdefault(role, f"self.{target.attr.value}")
    for call in _launches(tree.module):
        assert isinstance(call.func, cst.Subscript)
        params = kernels.get(_render(call.func.value), [])
        positional = [a for a in call.args if a.keyword is None and not a.star]
        for param, arg in zip(params, positional, strict=False):
            role = _role(param)
            if role in attributes and isinstance(arg.value, cst.Name) and arg.value.value == "None":
                new = tree.replace(arg.value, _expr(attributes[role]))
                yield Edit(new, tree.line(arg), f"launch: pass {attributes[role]} as {param}")


# ---------------------------------------------------------------- variance_divisor

_BIASED = re.compile(
    r"LayerNorm|layer_norm|BatchNorm|batch_norm|GroupNorm|group_norm|InstanceNorm|instance_norm|"
    r"unbiased\s*=\s*False|correction\s*=\s*0\b"
)
_UNBIASED_CALL = re.compile(r"(torch\.|\.)(var|std|var_mean|std_mean)\(")
_BIASED_ARG = re.compile(r"unbiased\s*=\s*False|correction\s*=\s*0\b")


def _expects_biased(reference: str) -> bool | None:
    """True for a biased (/ N) variance, False for an unbiased one (/ (N - 1)), None for no variance."""
    if _UNBIASED_CALL.search(reference):
        return bool(_BIASED_ARG.search(reference))
    if _BIASED.search(reference):
        return True
    return None


def _is_minus_one(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`n` when `expr` is `n - 1` (or `n - 1.0`), with or without parentheses."""
    if (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, cst.Subtract)
        and _is_number(expr.right, 1)
    ):
        return expr.left
    return None


def _squared_flow(fn: cst.FunctionDef, expr: cst.BaseExpression, depth: int = 3) -> bool:
    """`expr` squares something, directly or through the names it reads (`acc += d * d`)."""
    if _squares(expr) or _calls(expr, "tl.math.pow", "tl.pow"):
        return True
    if depth == 0:
        return False
    values = _values_of(fn)
    return any(_squared_flow(fn, v, depth - 1) for n in _names(expr) for v in values.get(n, []))


_ROOTS = ("tl.sqrt", "tl.rsqrt", "tl.math.sqrt", "tl.math.rsqrt", "tl.sqrt_rn", "libdevice.rsqrt")


def _under_root(tree: Tree, fn: cst.FunctionDef, div: cst.BinaryOperation) -> bool:
    """`div` is taken a square root of, in place or through the name it is assigned to (a variance, e.g.
    from a Welford M2 whose products are not plain squares)."""
    ancestors = _ancestors(tree, div)
    if any(isinstance(a, cst.Call) and (_dotted(a.func) or "").endswith(_ROOTS) for a in ancestors):
        return True
    assign = next((a for a in ancestors if isinstance(a, cst.Assign)), None)
    if assign is None or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return False
    target = assign.targets[0].target.value
    return any(target in _names(c) for c in _calls(fn.body, *_ROOTS))


@rule(
    "variance_divisor",
    title="the variance divides by N or N - 1 as the reference does",
    bug_class="normalisation",
    symptoms=("everywhere", "rows", "constant_ratio", "scattered"),
)
def variance_divisor(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A variance divided by N where the reference divides by N - 1, or the other way round."""
    if context is None:
        return
    biased = _expects_biased(context.reference_source)
    if biased is None:
        return
    _, constexpr = _scalar_params(fn)
    for div in findall(fn.body, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        numerator: cst.BaseExpression = div.left
        parent = tree.parent(div)
        if _is_number(div.left, 1) and isinstance(parent, cst.BinaryOperation):
            numerator = parent.right if parent.left is div else parent.left
        if not (_calls(numerator, "tl.sum") or isinstance(numerator, cst.Name)):
            continue
        if not (_squared_flow(fn, numerator) or _under_root(tree, fn, div)):
            continue
        count = _is_minus_one(div.right)
        if biased and count is not None:
            atomic = isinstance(count, cst.Name | cst.Attribute | cst.Call | cst.Subscript | cst.Integer)
            new_right = count.with_changes(lpar=[], rpar=[]) if atomic else _wrapped(count)
            what = "biased variance like the reference: divide by N"
        elif not biased and count is None:
            if isinstance(div.right, cst.Name) and div.right.value in constexpr:
                continue  # a block size: a different bug
            new_right = _expr(f"({_render(div.right)} - 1)")
            what = "unbiased variance like the reference: divide by N - 1"
        else:
            continue
        new = tree.replace(div.right, new_right)
        yield Edit(new, tree.line(div.right), f"{fn.name.value}: {what}")
    for aug in findall(fn.body, m.AugAssign(operator=m.DivideAssign())):
        # `var /= (n - 1)` after `var = tl.sum(d * d)`.
        assert isinstance(aug, cst.AugAssign)
        if not (isinstance(aug.target, cst.Name) and _squared_flow(fn, aug.target)):
            continue
        count = _is_minus_one(aug.value)
        if biased and count is not None:
            atomic = isinstance(count, cst.Name | cst.Attribute | cst.Call | cst.Subscript | cst.Integer)
            new_value = count.with_changes(lpar=[], rpar=[]) if atomic else _wrapped(count)
            what = "biased variance like the reference: divide by N"
        elif (
            not biased
            and count is None
            and not (isinstance(aug.value, cst.Name) and aug.value.value in constexpr)
        ):
            new_value = _expr(f"({_render(aug.value)} - 1)")
            what = "unbiased variance like the reference: divide by N - 1"
        else:
            continue
        new = tree.replace(aug.value, new_value)
        yield Edit(new, tree.line(aug), f"{fn.name.value}: {what}")


# ---------------------------------------------------------------- drop_divisor

_SUMS = re.compile(r"lp_pool|LPPool|\bnorm\(|vector_norm|linalg\.norm|normalize\(|\bsum\(|\.sum\b|sum_pool")
_MEANS = re.compile(
    r"mean|avg|Avg|average|rms|RMS|LayerNorm|layer_norm|BatchNorm|batch_norm|GroupNorm|group_norm|"
    r"InstanceNorm|instance_norm|\bvar\(|\bstd\(|softmax|/\s*[\w.]*(shape|size|numel)"
)


def _sum_reference(reference: str) -> bool:
    """The reference's operator sums (a p-norm, LPPool, sum pooling) and nothing in it averages."""
    code = "\n".join(
        line.split("#")[0] for line in reference.splitlines() if not line.strip().startswith('"')
    )
    code = re.sub(r'""".*?"""', "", code, flags=re.S)
    code = re.sub(r"^(import|from) .*$", "", code, flags=re.M)
    return bool(_SUMS.search(code)) and not _MEANS.search(code)


def _size_expr(
    expr: cst.BaseExpression, sizes: set[str], locals_: dict[str, list[cst.BaseExpression]]
) -> bool:
    """`expr` is a size: a scalar parameter, a product of them, or a local name holding one."""
    if isinstance(expr, cst.Name):
        if expr.value in sizes:
            return True
        vs = locals_.get(expr.value, [])
        return len(vs) == 1 and _size_expr(vs[0], sizes, {})
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _size_expr(expr.left, sizes, locals_) and _size_expr(expr.right, sizes, locals_)
    return False


@rule(
    "drop_divisor",
    title="a sum-type result (p-norm, LPPool, sum pooling) is not divided by the window size",
    bug_class="operator_misread",
    symptoms=("everywhere", "constant_ratio", "rows", "scattered"),
)
def drop_divisor(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """The stored result is divided by a window or row size where the reference sums: drop the division."""
    if context is None or not _sum_reference(context.reference_source):
        return
    runtime, constexpr = _scalar_params(fn)
    sizes = set(runtime) | constexpr
    values = _values_of(fn)
    seen: set[int] = set()
    stored: list[cst.BaseExpression] = []
    for store in _calls(fn.body, "tl.store"):
        value = _arg(store, "value", 1)
        if value is not None:
            stored.append(value.value)
    # Follow the stored value back through the assignments it reads.
    todo, visited = list(stored), set()
    exprs: list[cst.BaseExpression] = []
    while todo:
        expr = todo.pop()
        exprs.append(expr)
        for name in _names(expr):
            if name not in visited:
                visited.add(name)
                todo.extend(values.get(name, []))
    for expr in exprs:
        for div in findall(expr, m.BinaryOperation(operator=m.Divide())):
            assert isinstance(div, cst.BinaryOperation)
            if id(div) in seen or not _size_expr(div.right, sizes, values):
                continue
            seen.add(id(div))
            kept = div.left.with_changes(lpar=div.lpar, rpar=div.rpar) if div.lpar else div.left
            new = tree.replace(div, kept)
            what = f"{fn.name.value}: the reference sums, drop the division by {_render(div.right)}"
            yield Edit(new, tree.line(div), what)
    for aug in findall(fn.body, m.AugAssign(operator=m.DivideAssign())):
        assert isinstance(aug, cst.AugAssign)
        if not (isinstance(aug.target, cst.Name) and aug.target.value in visited):
            continue
        if not _size_expr(aug.value, sizes, values):
            continue
        stmt = _statement(tree, aug)
        if stmt is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        new = _edit(tree, {}, drop={stmt})
        what = f"{fn.name.value}: the reference sums, drop {aug.target.value} /= {_render(aug.value)}"
        yield Edit(new, tree.line(aug), what)


RULES = rules_of(__name__)
