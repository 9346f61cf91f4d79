"""Offline rewrite rules: small single-site source edits proposed from the bug taxonomy.

Rules transform text through libcst, so untouched code keeps its exact formatting and diffs stay minimal.
They never run the candidate: the repair engine evaluates every proposal and keeps what improves the score.
Adding a rule takes one function `(source, context) -> list[Rewrite]` and one `Rule` entry in `RULES`; the
optional `RuleContext` carries what only the reference knows (constructor arguments, eps, reduction mode).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider


@dataclass(frozen=True)
class Rewrite:
    rule: str
    description: str
    source: str  # the complete new source
    line: int  # 1-based line of the change in the original


@dataclass(frozen=True)
class RuleContext:
    """What the reference says about the operator: its source and the constructor arguments it is built with."""

    reference_source: str = ""
    init_args: tuple[Any, ...] = ()

    @classmethod
    def from_reference(cls, reference_source: str) -> RuleContext:
        """Read `get_init_inputs()` statically (literals and module constants); the reference never runs here."""
        return cls(reference_source, _static_init_args(reference_source))

    def init_params(self) -> dict[str, Any]:
        """The reference Model's constructor arguments by name: the values passed, else the defaults."""
        try:
            module = ast.parse(self.reference_source)
        except SyntaxError:
            return {}
        for cls_node in module.body:
            if not (isinstance(cls_node, ast.ClassDef) and cls_node.name == "Model"):
                continue
            for fn in cls_node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    args = [a.arg for a in fn.args.args[1:]]
                    defaults = fn.args.defaults
                    out: dict[str, Any] = {}
                    for name, default in zip(args[len(args) - len(defaults) :], defaults, strict=True):
                        try:
                            out[name] = ast.literal_eval(default)
                        except ValueError:
                            pass
                    out.update(zip(args, self.init_args, strict=False))
                    return out
        return {}

    def mentions(self, text: str) -> bool:
        return text in self.reference_source


def _static_init_args(source: str) -> tuple[Any, ...]:
    try:
        module = ast.parse(source)
    except SyntaxError:
        return ()
    constants: dict[str, Any] = {}
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                constants[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except ValueError:
                pass
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "get_init_inputs":
            for ret in ast.walk(stmt):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.List | ast.Tuple):
                    values = []
                    for elt in ret.value.elts:
                        if isinstance(elt, ast.Name):
                            values.append(constants.get(elt.id))
                        else:
                            try:
                                values.append(ast.literal_eval(elt))
                            except ValueError:
                                values.append(None)
                    return tuple(values)
    return ()


RuleFn = Callable[[str, "RuleContext | None"], list[Rewrite]]


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    bug_class: str
    symptoms: tuple[str, ...]
    apply: RuleFn


# ---------------------------------------------------------------- shared helpers


class _Tree:
    """A parsed source with line positions; an edit replaces one node and yields the new source."""

    def __init__(self, module: cst.Module) -> None:
        wrapper = MetadataWrapper(module)
        self.module = wrapper.module
        self._positions = wrapper.resolve(PositionProvider)
        self._parents = wrapper.resolve(ParentNodeProvider)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def insert_before(self, node: cst.CSTNode, *statements: str) -> tuple[cst.Module, int] | None:
        """The module with `statements` inserted before the block statement holding `node`, and its line."""
        stmt: cst.CSTNode | None = node
        while stmt is not None and not isinstance(self.parent(stmt), cst.IndentedBlock):
            stmt = self.parent(stmt)
        block = self.parent(stmt) if stmt is not None else None
        if stmt is None or not isinstance(block, cst.IndentedBlock):
            return None
        at = next(i for i, s in enumerate(block.body) if s is stmt)
        new = [cst.parse_statement(code if code.endswith("\n") else code + "\n") for code in statements]
        body = [*block.body[:at], *new, *block.body[at:]]
        return self.replace(block, block.with_changes(body=body)), self.line(stmt)

    def line(self, node: cst.CSTNode, end: bool = False) -> int:
        pos = self._positions[node]
        return pos.end.line if end else pos.start.line

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def replace(self, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
        return self.module.deep_replace(old, new)  # type: ignore[return-value]


@lru_cache(maxsize=8)
def _tree(source: str) -> _Tree | None:
    # Trees are immutable, so every rule can share one parse of the same source.
    try:
        return _Tree(cst.parse_module(source))
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None


def _dotted(expr: cst.BaseExpression) -> str | None:
    """`tl.math.sqrt` for an Attribute chain of Names; `triton.language.` is spelled `tl.`."""
    if isinstance(expr, cst.Name):
        name = expr.value
    elif isinstance(expr, cst.Attribute):
        base = _dotted(expr.value)
        if base is None:
            return None
        name = f"{base}.{expr.attr.value}"
    else:
        return None
    return "tl." + name.removeprefix("triton.language.") if name.startswith("triton.language.") else name


def _calls(root: cst.CSTNode, *names: str) -> list[cst.Call]:
    return [c for c in m.findall(root, m.Call()) if isinstance(c, cst.Call) and _dotted(c.func) in names]


def _arg(call: cst.Call, keyword: str, position: int) -> cst.Arg | None:
    """The argument bound to `keyword`, given by name or at `position` among the positional ones."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position] if position < len(positional) else None


def _with_kwarg(call: cst.Call, keyword: str, value: str) -> cst.Call:
    """`call` with `keyword=value` appended, keeping a trailing-comma layout intact."""
    no_space = cst.SimpleWhitespace("")
    new = cst.Arg(
        value=cst.parse_expression(value),
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space),
    )
    args = list(call.args)
    if args and isinstance(args[-1].comma, cst.Comma):
        between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else cst.Comma()
        new = new.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=between)
    return call.with_changes(args=[*args, new])


def _is_number(expr: cst.BaseExpression, value: float) -> bool:
    if isinstance(expr, cst.Integer | cst.Float):
        try:
            return float(expr.value.replace("_", "")) == value
        except ValueError:
            return False
    if value == 0 and isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _is_number(expr.expression, 0)
    return False


def _names(node: cst.CSTNode) -> set[str]:
    """Variable names read in `node` (attribute names and keyword names are not variables)."""

    class Collector(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: set[str] = set()

        def visit_Name(self, node: cst.Name) -> None:
            self.found.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

    collector = Collector()
    node.visit(collector)
    return collector.found


def _kernels(module: cst.Module) -> list[cst.FunctionDef]:
    """Functions decorated with `@triton.jit` / `@jit` (with or without arguments)."""
    out = []
    for fn in m.findall(module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        for d in fn.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if (_dotted(target) or "").split(".")[-1] == "jit":
                out.append(fn)
                break
    return out


def _params(fn: cst.FunctionDef) -> list[cst.Param]:
    p = fn.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]


def _assignments(root: cst.CSTNode) -> list[tuple[set[str], cst.BaseExpression]]:
    """(target names, value) for every plain, annotated and augmented assignment under `root`."""
    out: list[tuple[set[str], cst.BaseExpression]] = []
    for node in m.findall(root, m.Assign() | m.AnnAssign() | m.AugAssign()):
        if isinstance(node, cst.Assign):
            targets = set().union(*(_names(t.target) for t in node.targets))
            out.append((targets, node.value))
        elif isinstance(node, cst.AnnAssign | cst.AugAssign) and node.value is not None:
            out.append((_names(node.target), node.value))
    return out


def _rewrite(rule: str, new: cst.Module, line: int, what: str) -> Rewrite:
    return Rewrite(rule=rule, description=f"{what} (line {line})", source=new.code, line=line)


# ---------------------------------------------------------------- neutral_other_max

_NEUTRAL = {
    "max": '-float("inf")',
    "argmax": '-float("inf")',
    "min": 'float("inf")',
    "argmin": 'float("inf")',
}


def _reachable(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _neutral_other_max(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        assigns = _assignments(fn.body)
        edges: dict[str, set[str]] = {}
        for targets, value in assigns:
            for name in _names(value):
                edges.setdefault(name, set()).update(targets)
        reducers: list[tuple[str, set[str], list[cst.Call]]] = []
        for red in _calls(fn.body, *(f"tl.{k}" for k in _NEUTRAL)):
            first = _arg(red, "input", 0)
            if first is not None:
                kind = (_dotted(red.func) or "").removeprefix("tl.")
                reducers.append((kind, _names(first.value), _calls(first.value, "tl.load")))
        # Which reductions each load feeds: through assignments, or written straight into the reduction.
        feeds: dict[int, set[str]] = {}
        for targets, value in assigns:
            for load in _calls(value, "tl.load"):
                reach = set().union(*(_reachable(t, edges) for t in targets))
                feeds.setdefault(id(load), set()).update(k for k, names, _ in reducers if reach & names)
        for kind, _, direct in reducers:
            for load in direct:
                feeds.setdefault(id(load), set()).add(kind)
        for load in _calls(fn.body, "tl.load"):
            for kind in sorted(feeds.get(id(load), ())):
                neutral = _NEUTRAL[kind]
                other = _arg(load, "other", 2)
                if other is not None and _is_number(other.value, 0):
                    new = tree.replace(other.value, cst.parse_expression(neutral))
                    line = tree.line(other)
                    what = f"other={tree.code(other.value)} -> other={neutral}"
                elif other is None and _arg(load, "mask", 1) is not None:
                    new = tree.replace(load, _with_kwarg(load, "other", neutral))
                    line = tree.line(load.args[-1], end=True)
                    what = f"add other={neutral}"
                else:
                    continue
                desc = f"{fn.name.value}: {what} on the load feeding tl.{kind}"
                out.append(_rewrite("neutral_other_max", new, line, desc))
    return out


# ---------------------------------------------------------------- mask_le_to_lt


def _mask_expressions(module: cst.Module) -> list[cst.BaseExpression]:
    """Expressions used as masks: assigned to a *mask* name, passed as mask=, or tl.load/tl.store's mask."""
    found: list[cst.BaseExpression] = []
    for targets, value in _assignments(module):
        if any("mask" in t.lower() for t in targets):
            found.append(value)
    for call in m.findall(module, m.Call()):
        assert isinstance(call, cst.Call)
        # Only tl.load and tl.store take the mask positionally; elsewhere only mask= counts.
        position = {"tl.load": 1, "tl.store": 2}.get(_dotted(call.func) or "", len(call.args))
        arg = _arg(call, "mask", position)
        if arg is not None:
            found.append(arg.value)
    return found


def _mask_le_to_lt(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    seen: set[int] = set()
    for expr in _mask_expressions(tree.module):
        for cmp in m.findall(expr, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            if id(cmp) in seen:
                continue
            seen.add(id(cmp))
            for i, target in enumerate(cmp.comparisons):
                left = cmp.left if i == 0 else cmp.comparisons[i - 1].comparator
                op = target.operator
                # `0 <= offs` / `offs >= 0` is a lower bound and right as written.
                if isinstance(op, cst.LessThanEqual) and not _is_number(left, 0):
                    strict: cst.BaseCompOp = cst.LessThan(
                        whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
                    )
                elif isinstance(op, cst.GreaterThanEqual) and not _is_number(target.comparator, 0):
                    strict = cst.GreaterThan(
                        whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
                    )
                else:
                    continue
                targets = list(cmp.comparisons)
                targets[i] = target.with_changes(operator=strict)
                new = tree.replace(cmp, cmp.with_changes(comparisons=targets))
                before = tree.code(cmp)
                after = cst.Module([]).code_for_node(cmp.with_changes(comparisons=targets))
                out.append(_rewrite("mask_le_to_lt", new, tree.line(cmp), f"mask: {before} -> {after}"))
    return out


# ---------------------------------------------------------------- store_mask


def _store_mask(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        assigns = _assignments(fn.body)
        sources: dict[str, set[str]] = {}  # name -> names its assigned values read
        for targets, value in assigns:
            for t in targets:
                sources.setdefault(t, set()).update(_names(value))
        masks: list[str] = []
        for load in _calls(fn.body, "tl.load"):
            mask = _arg(load, "mask", 1)
            if mask is not None and isinstance(mask.value, cst.Name) and mask.value.value not in masks:
                masks.append(mask.value.value)
        for store in _calls(fn.body, "tl.store"):
            pointer = _arg(store, "pointer", 0)
            if pointer is None or _arg(store, "mask", 2) is not None:
                continue
            # Offer a mask only where the store's addresses share an offset with it: a scalar store of a
            # reduction result (`out_ptr + pid`) must not take the vector mask.
            addressed = set().union(*(_reachable(n, sources) for n in _names(pointer.value)))
            for mask_name in masks:
                if mask_name in sources and not sources[mask_name] & addressed:
                    continue
                new = tree.replace(store, _with_kwarg(store, "mask", mask_name))
                line = tree.line(store.args[-1], end=True)
                desc = f"{fn.name.value}: tl.store gets mask={mask_name}, the mask its loads use"
                out.append(_rewrite("store_mask", new, line, desc))
    return out


# ---------------------------------------------------------------- grid_cdiv


def _with_triton_import(module: cst.Module) -> cst.Module:
    for imp in m.findall(module, m.Import()):
        assert isinstance(imp, cst.Import)
        if any(_dotted(a.name) == "triton" and a.asname is None for a in imp.names):
            return module
    body = list(module.body)
    at = 0
    # The import goes after a module docstring and `from __future__` imports, which must come first.
    while at < len(body) and m.matches(
        body[at],
        m.SimpleStatementLine(body=[m.Expr(m.SimpleString())])
        | m.SimpleStatementLine(body=[m.ImportFrom(module=m.Name("__future__"))]),
    ):
        at += 1
    return module.with_changes(body=[*body[:at], cst.parse_statement("import triton\n"), *body[at:]])


def _grid_expressions(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    for call in m.findall(module, m.Call(func=m.Subscript())):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Subscript)
        found.extend(call.func.slice)
    for targets, value in _assignments(module):
        if any("grid" in t.lower() for t in targets):
            found.append(value)
    return found


def _is_ceil_division(op: cst.BinaryOperation) -> bool:
    """`(a + b - 1) // b` already rounds up."""
    left = op.left
    return (
        isinstance(left, cst.BinaryOperation)
        and isinstance(left.operator, cst.Subtract)
        and _is_number(left.right, 1)
    )


def _grid_cdiv(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    seen: set[int] = set()
    for expr in _grid_expressions(tree.module):
        cdivs = _calls(expr, "triton.cdiv", "cdiv")
        inside_cdiv = {id(n) for c in cdivs for n in m.findall(c, m.BinaryOperation())}
        for op in m.findall(expr, m.BinaryOperation(operator=m.FloorDivide())):
            assert isinstance(op, cst.BinaryOperation)
            if id(op) in seen or id(op) in inside_cdiv or _is_ceil_division(op):
                continue
            seen.add(id(op))

            def bare(e: cst.BaseExpression) -> cst.BaseExpression:
                return e if isinstance(e, cst.Tuple | cst.GeneratorExp) else e.with_changes(lpar=[], rpar=[])

            call = cst.Call(
                func=cst.parse_expression("triton.cdiv"),
                args=[
                    cst.Arg(bare(op.left), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    cst.Arg(bare(op.right)),
                ],
                lpar=op.lpar,
                rpar=op.rpar,
            )
            new = _with_triton_import(tree.replace(op, call))
            what = f"grid: {tree.code(op)} -> {cst.Module([]).code_for_node(call)}"
            out.append(_rewrite("grid_cdiv", new, tree.line(op), what))
    return out


# ---------------------------------------------------------------- fp32_accumulator


def _fp32_accumulator(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for call in _calls(tree.module, "tl.zeros", "tl.full"):
        dtype = _arg(call, "dtype", 1 if _dotted(call.func) == "tl.zeros" else 2)
        value = dtype.value if dtype is not None else None
        if isinstance(value, cst.Attribute) and value.attr.value in ("float16", "bfloat16"):
            new = tree.replace(value, value.with_changes(attr=cst.Name("float32")))
            desc = f"{_dotted(call.func)}: accumulator dtype {tree.code(value)} -> float32"
            out.append(_rewrite("fp32_accumulator", new, tree.line(value), desc))
    return out


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


def _eps_inside_sqrt(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
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
        out.append(_rewrite("eps_inside_sqrt", tree.replace(div, call), tree.line(div), what))
    for add in m.findall(tree.module, m.BinaryOperation(operator=m.Add())):
        assert isinstance(add, cst.BinaryOperation)
        found = _sqrt_plus_eps(add)
        if found is None or id(add) in covered:
            continue
        sqrt, eps = found
        # A call needs no grouping parentheses, so `x / (sqrt(v) + eps)` becomes `x / sqrt(v + eps)`.
        call = sqrt.with_changes(args=[cst.Arg(_inner_sum(sqrt, eps))], lpar=[], rpar=[])
        what = f"{tree.code(add)} -> {cst.Module([]).code_for_node(call)}"
        out.append(_rewrite("eps_inside_sqrt", tree.replace(add, call), tree.line(add), what))
    return out


# ---------------------------------------------------------------- divide_by_n_not_block


def _divide_by_n_not_block(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        constexpr, sizes = set(), []
        names = set()
        for p in _params(fn):
            names.add(p.name.value)
            annotation = _dotted(p.annotation.annotation) if p.annotation else None
            if (annotation or "").split(".")[-1] == "constexpr":
                constexpr.add(p.name.value)
        for cmp in m.findall(fn.body, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            for side in (cmp.left, *(t.comparator for t in cmp.comparisons)):
                if isinstance(side, cst.Name) and side.value in names - constexpr and side.value not in sizes:
                    sizes.append(side.value)
        divisors: list[cst.Name] = []
        for node in m.findall(
            fn.body, m.BinaryOperation(operator=m.Divide()) | m.AugAssign(operator=m.DivideAssign())
        ):
            divisor = node.right if isinstance(node, cst.BinaryOperation) else node.value  # type: ignore[union-attr]
            if isinstance(divisor, cst.Name) and divisor.value in constexpr:
                divisors.append(divisor)
        for divisor in divisors:
            for size in sizes:
                new = tree.replace(divisor, divisor.with_changes(value=size))
                desc = (
                    f"{fn.name.value}: divide by {size} (the true size), not the block size {divisor.value}"
                )
                out.append(_rewrite("divide_by_n_not_block", new, tree.line(divisor), desc))
    return out


# ---------------------------------------------------------------- contiguous_inputs

_SCALAR_TYPES = {"int", "float", "bool", "str"}


def _forward(module: cst.Module) -> cst.FunctionDef | None:
    for cls in m.findall(module, m.ClassDef(name=m.Name("ModelNew"))):
        assert isinstance(cls, cst.ClassDef)
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward":
                return stmt
    return None


def _contiguous_inputs(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    fn = _forward(tree.module) if tree is not None else None
    if tree is None or fn is None or not isinstance(fn.body, cst.IndentedBlock):
        return []
    body = fn.body
    already = {
        c.func.value.value
        for c in m.findall(body, m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("contiguous"))))
        if isinstance(c, cst.Call)
        and isinstance(c.func, cst.Attribute)
        and isinstance(c.func.value, cst.Name)
    }
    params = [p for p in _params(fn) if p.name.value != "self"]
    todo = [
        p.name.value
        for p in params
        if p.name.value not in already
        and not (p.annotation and _dotted(p.annotation.annotation) in _SCALAR_TYPES)
    ]
    docstring = m.SimpleStatementLine(body=[m.Expr(m.SimpleString() | m.ConcatenatedString())])
    at = 1 if body.body and m.matches(body.body[0], docstring) else 0
    line = tree.line(body.body[at]) if at < len(body.body) else tree.line(fn)
    groups = [[x] for x in todo] + ([todo] if len(todo) > 1 else [])
    out: list[Rewrite] = []
    for group in groups:
        stmts = [cst.parse_statement(f"{x} = {x}.contiguous()\n") for x in group]
        new_body = body.with_changes(body=[*body.body[:at], *stmts, *body.body[at:]])
        what = "ModelNew.forward: make " + ", ".join(group) + " contiguous first"
        out.append(_rewrite("contiguous_inputs", tree.replace(body, new_body), line, what))
    return out


# ---------------------------------------------------------------- registry

RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "neutral_other_max",
            "masked load feeding tl.max/tl.min pads with the reduction's neutral element",
            "neutral_element",
            ("rows", "everywhere", "tail_block", "constant_ratio", "shape"),
            _neutral_other_max,
        ),
        Rule(
            "mask_le_to_lt",
            "bounds mask uses < n, not <= n",
            "tail_mask",
            ("tail_block", "trailing", "out_of_bounds_write", "garbage_region", "shape"),
            _mask_le_to_lt,
        ),
        Rule(
            "store_mask",
            "tl.store masked like the loads",
            "tail_mask",
            ("out_of_bounds_write", "tail_block", "garbage_region", "shape"),
            _store_mask,
        ),
        Rule(
            "grid_cdiv",
            "launch grid rounds up with triton.cdiv",
            "grid_coverage",
            ("tail_block", "trailing", "untouched_region", "zero_region", "garbage_region", "shape"),
            _grid_cdiv,
        ),
        Rule(
            "fp32_accumulator",
            "accumulate in float32, not half precision",
            "accumulation_precision",
            ("grows_with_magnitude", "x100", "everywhere", "scattered"),
            _fp32_accumulator,
        ),
        Rule(
            "eps_inside_sqrt",
            "eps added under the square root, as the reference does",
            "numerical_stability",
            ("everywhere", "rows", "scattered"),
            _eps_inside_sqrt,
        ),
        Rule(
            "divide_by_n_not_block",
            "normalise by the true size, not the block size",
            "normalisation",
            ("everywhere", "rows", "constant_ratio", "shape"),
            _divide_by_n_not_block,
        ),
        Rule(
            "contiguous_inputs",
            "make forward's tensor inputs contiguous",
            "strides_layout",
            ("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered"),
            _contiguous_inputs,
        ),
    )
}


def propose(
    source: str, rule_ids: Sequence[str] | None = None, context: RuleContext | None = None
) -> list[Rewrite]:
    """All rewrites of the given rules (default: all) in rule order, one per distinct resulting source."""
    ids: Iterable[str] = RULES if rule_ids is None else rule_ids
    unknown = [i for i in ids if i not in RULES]
    if unknown:
        raise ValueError(f"unknown rewrite rule(s): {', '.join(unknown)}")
    if _tree(source) is None:
        return []
    seen, out = {source}, []
    for rule_id in ids:
        for rewrite in RULES[rule_id].apply(source, context):
            if rewrite.source not in seen:
                seen.add(rewrite.source)
                out.append(rewrite)
    return out


def rank_rules(evidence: Sequence[str]) -> list[str]:
    """Rule ids, most evidence keywords matched by their symptoms first; ties keep registry order."""
    keys = set(evidence)
    return sorted(RULES, key=lambda rule_id: -len(keys & set(RULES[rule_id].symptoms)))
