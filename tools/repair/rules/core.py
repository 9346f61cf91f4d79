"""Offline rewrite rules: small single-site source edits proposed from the bug taxonomy.

Rules transform text through libcst, so untouched code keeps its exact formatting and diffs stay minimal.
They never run the candidate: the repair engine evaluates every proposal and keeps what improves the score.
Adding a rule takes one function `(source, context) -> list[Rewrite]` and one `Rule` entry in `RULES`; the
optional `RuleContext` carries what only the reference knows (constructor arguments, eps, reduction mode).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
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
    """The reference's semantics: its source and the constructor arguments it is built with."""

    reference_source: str = ""
    init_args: tuple[Any, ...] = ()
    output_dtype: str = ""  # the reference output's dtype ("int64"), when an evaluation reported it

    @classmethod
    def from_reference(cls, reference_source: str, report: dict[str, Any] | None = None) -> RuleContext:
        """Read `get_init_inputs()` statically (literals, module constants): the reference never runs here."""
        return cls(reference_source, _static_init_args(reference_source), _reference_dtype(report or {}))

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


def _reference_dtype(report: Any) -> str:
    """The first reference dtype the report names (a mismatch analysis field or a dtype symptom)."""
    if isinstance(report, str):
        found = re.search(r"reference dtype (\w+)", report)
        return found.group(1) if found else ""
    if isinstance(report, dict):
        if isinstance(report.get("reference_dtype"), str) and report["reference_dtype"]:
            return report["reference_dtype"]
        items: Any = report.values()
    elif isinstance(report, list):
        items = report
    else:
        return ""
    for item in items:
        found = _reference_dtype(item)
        if found:
            return found
    return ""


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
            if mask is not None and _render(mask.value) not in masks:
                masks.append(_render(mask.value))
        for store in _calls(fn.body, "tl.store"):
            pointer = _arg(store, "pointer", 0)
            if pointer is None:
                continue
            # Offer a mask only where the store's addresses share an offset with it: a scalar store of a
            # reduction result (`out_ptr + pid`) must not take the vector mask.
            addressed = set().union(*(_reachable(n, sources) for n in _names(pointer.value)))
            current = _arg(store, "mask", 2)
            for mask in masks:
                names = _names(_expr(mask))
                reads = set().union(*(sources.get(n, {n}) for n in names))
                if not reads & addressed:
                    continue
                line = tree.line(store.args[-1], end=True)
                if current is None:
                    new = tree.replace(store, _with_kwarg(store, "mask", mask))
                    desc = f"{fn.name.value}: tl.store gets mask={mask}, the mask its loads use"
                elif not names <= _names(current.value) and isinstance(current.value, cst.Comparison):
                    # The store bounds one axis of a 2-D tile, its loads bound both: store under both.
                    old = _render(current.value)
                    # A load mask that already bounds the store's axis replaces it; otherwise both apply.
                    both = _expr(mask if _names(current.value) <= names else f"({old}) & ({mask})")
                    new = tree.replace(current.value, both)
                    desc = f"{fn.name.value}: tl.store mask also takes its loads' {mask}"
                else:
                    continue
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
    in_grid: set[str] = set()
    for call in m.findall(module, m.Call(func=m.Subscript())):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Subscript)
        found.extend(call.func.slice)
        in_grid |= set().union(*(_names(s) for s in call.func.slice))
    # `n_blocks = n // BLOCK` then `kernel[(n_blocks,)]`: the grid's size is computed a line earlier.
    for targets, value in _assignments(module):
        if any("grid" in t.lower() for t in targets) or targets & in_grid:
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


# ---------------------------------------------------------------- shared helpers for the rules below


def _expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def _render(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _constexpr_params(fn: cst.FunctionDef) -> set[str]:
    out = set()
    for p in _params(fn):
        annotation = _dotted(p.annotation.annotation) if p.annotation else None
        if (annotation or "").split(".")[-1] == "constexpr":
            out.add(p.name.value)
    return out


def _flow(fn: cst.FunctionDef) -> dict[str, set[str]]:
    """name -> names assigned from expressions that read it (the kernel's data flow)."""
    edges: dict[str, set[str]] = {}
    for targets, value in _assignments(fn.body):
        for name in _names(value):
            edges.setdefault(name, set()).update(targets)
    return edges


def _feeds(load: cst.Call, fn: cst.FunctionDef, tree: _Tree) -> set[str]:
    """Names a load's value reaches: the assignment target holding it and everything computed from it."""
    node: cst.CSTNode | None = load
    while node is not None and not isinstance(node, cst.Assign | cst.AnnAssign | cst.AugAssign):
        node = tree.parent(node)
    if node is None:
        return set()
    targets = (
        set().union(*(_names(t.target) for t in node.targets))
        if isinstance(node, cst.Assign)
        else _names(node.target)  # type: ignore[union-attr]
    )
    edges = _flow(fn)
    return set().union(*(_reachable(t, edges) for t in targets)) if targets else set()


def _values_of(fn: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    out: dict[str, list[cst.BaseExpression]] = {}
    for targets, value in _assignments(fn.body):
        for t in targets:
            out.setdefault(t, []).append(value)
    return out


def _mask_names(fn: cst.FunctionDef) -> list[str]:
    """Names used as masks in a kernel: assigned to a *mask* name or passed as a load/store mask."""
    found: list[str] = []
    for targets, _ in _assignments(fn.body):
        found += [t for t in sorted(targets) if "mask" in t.lower() and t not in found]
    for call in _calls(fn.body, "tl.load", "tl.store"):
        arg = _arg(call, "mask", 1 if _dotted(call.func) == "tl.load" else 2)
        if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value not in found:
            found.append(arg.value.value)
    return found


def _for_loops(fn: cst.FunctionDef) -> list[cst.For]:
    return [f for f in m.findall(fn.body, m.For()) if isinstance(f, cst.For)]


def _inside(tree: _Tree, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
    parent = tree.parent(node)
    while parent is not None and not isinstance(parent, kind):
        parent = tree.parent(parent)
    return parent


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, cst.BinaryOperation | cst.BooleanOperation | cst.Comparison | cst.UnaryOperation):
        if not expr.lpar:
            return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr


# ---------------------------------------------------------------- neutral elements beyond max/min

_EXP = ("tl.exp", "tl.math.exp", "tl.exp2", "tl.math.exp2")
_SUM = ("tl.sum", "tl.cumsum", "tl.dot")
_EXTREMA = tuple(f"tl.{k}" for k in _NEUTRAL)


def _neutral_for(
    source: str, rule: str, consumers: tuple[str, ...], avoid: tuple[str, ...], neutral: str, wrong: Callable
) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        wanted = set().union(*(_names(c.args[0].value) for c in _calls(fn.body, *consumers) if c.args))
        avoided = set().union(*(_names(c.args[0].value) for c in _calls(fn.body, *avoid) if c.args))
        for load in _calls(fn.body, "tl.load"):
            reach = _feeds(load, fn, tree)
            if not reach & wanted or reach & avoided:
                continue
            other = _arg(load, "other", 2)
            if other is not None and wrong(other.value):
                new = tree.replace(other.value, _expr(neutral))
                line, what = tree.line(other), f"other={tree.code(other.value)} -> other={neutral}"
            elif other is None and _arg(load, "mask", 1) is not None:
                new = tree.replace(load, _with_kwarg(load, "other", neutral))
                line, what = tree.line(load.args[-1], end=True), f"add other={neutral}"
            else:
                continue
            out.append(
                _rewrite(rule, new, line, f"{fn.name.value}: {what} on the load feeding {consumers[0]}")
            )
    return out


def _neutral_other_exp(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    # Padded lanes that take part in exp must vanish: exp(-inf) = 0.
    return _neutral_for(
        source, "neutral_other_exp", _EXP, _EXTREMA, '-float("inf")', lambda e: not _is_neg_inf(e)
    )


def _neutral_other_sum(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    return _neutral_for(
        source, "neutral_other_sum", _SUM, _EXTREMA + _EXP, "0.0", lambda e: not _is_number(e, 0)
    )


def _is_neg_inf(expr: cst.BaseExpression) -> bool:
    code = _render(expr).replace(" ", "").replace("'", '"')
    return code in ('-float("inf")', "-math.inf", 'float("-inf")', "-tl.inf", "-inf")


# ---------------------------------------------------------------- load_mask


def _load_mask(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        sources: dict[str, set[str]] = {}
        for targets, value in _assignments(fn.body):
            for t in targets:
                sources.setdefault(t, set()).update(_names(value))
        for load in _calls(fn.body, "tl.load"):
            pointer = _arg(load, "pointer", 0)
            if pointer is None or _arg(load, "mask", 1) is not None:
                continue
            addressed = set().union(*(_reachable(n, sources) for n in _names(pointer.value)))
            for mask_name in _mask_names(fn):
                if mask_name in sources and not sources[mask_name] & addressed:
                    continue
                new = tree.replace(load, _with_kwarg(_with_kwarg(load, "mask", mask_name), "other", "0.0"))
                line = tree.line(load.args[-1], end=True)
                desc = f"{fn.name.value}: tl.load gets mask={mask_name}, the mask the kernel uses elsewhere"
                out.append(_rewrite("load_mask", new, line, desc))
    return out


# ---------------------------------------------------------------- mask_precedence


def _mask_precedence(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """`a < M & b < N` parses as `a < (M & b) < N`: split it into `(a < M) & (b < N)`."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for cmp in m.findall(tree.module, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        if len(cmp.comparisons) != 2:
            continue
        middle = cmp.comparisons[0].comparator
        if not (
            isinstance(middle, cst.BinaryOperation) and isinstance(middle.operator, cst.BitAnd | cst.BitOr)
        ):
            continue
        if middle.lpar:
            continue
        left = cst.Comparison(
            left=cmp.left, comparisons=[cmp.comparisons[0].with_changes(comparator=middle.left)]
        )
        right = cst.Comparison(left=middle.right, comparisons=[cmp.comparisons[1]])
        new_node = cst.BinaryOperation(
            left=_paren(left), operator=middle.operator, right=_paren(right), lpar=cmp.lpar, rpar=cmp.rpar
        )
        what = f"{tree.code(cmp)} -> {_render(new_node)}"
        out.append(_rewrite("mask_precedence", tree.replace(cmp, new_node), tree.line(cmp), what))
    return out


# ---------------------------------------------------------------- mask_offsets


def _is_arange(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and _dotted(expr.func) == "tl.arange"


def _mask_offsets(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """A bounds mask compares the local lane offsets, not the global ones (or the other way round)."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        values = _values_of(fn)
        local = [n for n, vs in values.items() if len(vs) == 1 and _is_arange(vs[0])]
        arange_names = set(local)
        glob = [
            n
            for n, vs in values.items()
            if len(vs) == 1
            and not _is_arange(vs[0])
            and (_calls(vs[0], "tl.arange") or _names(vs[0]) & arange_names)
            and "mask" not in n.lower()
        ]
        for targets, value in _assignments(fn.body):
            if not any("mask" in t.lower() for t in targets) or not isinstance(value, cst.Comparison):
                continue
            side = value.left
            if not isinstance(side, cst.Name):
                continue
            options = glob if side.value in local else local if side.value in glob else []
            for other in options:
                if other == side.value:
                    continue
                new = tree.replace(side, side.with_changes(value=other))
                what = f"{fn.name.value}: mask compares {other}, not {side.value}"
                out.append(_rewrite("mask_offsets", new, tree.line(side), what))
    return out


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


def _softmax_max_subtraction(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """exp of raw logits overflows: subtract the row max first (softmax, logsumexp)."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        if _calls(fn.body, "tl.max", "tl.maximum"):
            continue
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
                out.append(_rewrite("softmax_max_subtraction", new, line, desc))
    return out


# ---------------------------------------------------------------- online_softmax_rescale


def _online_softmax_rescale(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """In an online softmax, the running sum/accumulator must be rescaled by exp(m_old - m_new)."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
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
                out.append(_rewrite("online_softmax_rescale", new, tree.line(node), desc))
    return out


# ---------------------------------------------------------------- fp32_upcast_load


def _fp32_upcast_load(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Half-precision loads that feed a reduction or dot are upcast to float32 first."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        reducers = _calls(fn.body, "tl.sum", "tl.dot", "tl.cumsum", "tl.max", "tl.min")
        reduced = set().union(*(_names(a.value) for c in reducers for a in c.args if a.keyword is None))
        accumulated = {
            n.target.value
            for n in m.findall(fn.body, m.AugAssign())
            if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)
        }
        for load in _calls(fn.body, "tl.load"):
            parent = tree.parent(load)
            if isinstance(parent, cst.Attribute) and parent.attr.value == "to":
                continue
            reach = _feeds(load, fn, tree)
            if not reach & (reduced | accumulated):
                continue
            upcast = cst.Call(
                func=cst.Attribute(value=load, attr=cst.Name("to")), args=[cst.Arg(_expr("tl.float32"))]
            )
            new = tree.replace(load, upcast)
            desc = f"{fn.name.value}: upcast the load to float32 before it is reduced"
            out.append(_rewrite("fp32_upcast_load", new, tree.line(load, end=True), desc))
    return out


# ---------------------------------------------------------------- dot_ieee


def _dot_ieee(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for call in _calls(tree.module, "tl.dot"):
        tf32 = _arg(call, "allow_tf32", 99)
        precision = _arg(call, "input_precision", 99)
        if precision is not None:
            if "ieee" in tree.code(precision.value):
                continue
            new = tree.replace(precision.value, _expr('"ieee"'))
        elif tf32 is not None:
            if tree.code(tf32.value) == "False":
                continue
            new = tree.replace(tf32.value, _expr("False"))
        else:
            new = tree.replace(call, _with_kwarg(call, "input_precision", '"ieee"'))
        out.append(_rewrite("dot_ieee", new, tree.line(call), "tl.dot in full float32 precision, not TF32"))
    return out


# ---------------------------------------------------------------- variance_bias


def _squares(expr: cst.BaseExpression) -> bool:
    for op in m.findall(expr, m.BinaryOperation()):
        assert isinstance(op, cst.BinaryOperation)
        if isinstance(op.operator, cst.Power):
            return True
        if isinstance(op.operator, cst.Multiply) and _render(op.left).strip("() ") == _render(op.right).strip(
            "() "
        ):
            return True
    return False


def _variance_bias(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Biased (`/ N`) vs unbiased (`/ (N - 1)`) variance: propose the other one."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for div in m.findall(tree.module, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        if not _calls(div.left, "tl.sum") and not m.findall(
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
        out.append(_rewrite("variance_bias", tree.replace(right, new_right), tree.line(right), what))
    return out


# ---------------------------------------------------------------- mask_centered


def _mask_centered(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """`x - mean` on padded lanes adds mean**2 per padded lane to the variance: zero them first."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        masks = _mask_names(fn)
        if not masks:
            continue
        values = _values_of(fn)
        means = {n for n, vs in values.items() if any(_calls(v, "tl.sum") for v in vs)}
        for node in m.findall(fn.body, m.Assign()):
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
            out.append(_rewrite("mask_centered", tree.replace(value, wrapped), tree.line(value), desc))
    return out


# ---------------------------------------------------------------- affine_weight_bias

_WEIGHT = {"w", "weight", "gamma", "scale", "g"}
_BIAS = {"b", "bias", "beta", "shift"}


def _role(param: str) -> str | None:
    stem = param.lower().removesuffix("_ptr").removesuffix("ptr").rstrip("_")
    return "weight" if stem in _WEIGHT else "bias" if stem in _BIAS else None


def _affine_weight_bias(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """The kernel receives weight/bias pointers but never loads them: apply the affine step on the store."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        used = _names(fn.body)
        unused = {_role(p.name.value): p.name.value for p in _params(fn) if p.name.value not in used}
        unused.pop(None, None)
        if not unused:
            continue
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
            out.append(_rewrite("affine_weight_bias", new, tree.line(value), desc))
    return out


# ---------------------------------------------------------------- strides


def _is_stride(expr: cst.BaseExpression) -> bool:
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "stride"
    ):
        return True
    return isinstance(expr, cst.Name) and "stride" in expr.value.lower()


def _stride_pair(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Two strides of one tensor (`x.stride(0), x.stride(1)`) or two stride variables."""
    if isinstance(a, cst.Call) and isinstance(b, cst.Call) and _is_stride(a) and _is_stride(b):
        return _render(a.func) == _render(b.func)
    return isinstance(a, cst.Name) and isinstance(b, cst.Name) and _is_stride(a) and _is_stride(b)


def _launches(module: cst.Module) -> list[cst.Call]:
    """Kernel launches `kernel[grid](...)`."""
    return [c for c in m.findall(module, m.Call(func=m.Subscript())) if isinstance(c, cst.Call)]


def _swap(tree: _Tree, call: cst.Call, i: int, j: int) -> cst.Module:
    args = list(call.args)
    a, b = args[i], args[j]
    args[i] = a.with_changes(value=b.value)
    args[j] = b.with_changes(value=a.value)
    return tree.replace(call, call.with_changes(args=args))


def _stride_args_swap(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Two adjacent stride arguments of a launch passed in the wrong order."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for call in _launches(tree.module):
        args = call.args
        for i in range(len(args) - 1):
            a, b = args[i], args[i + 1]
            if a.keyword is None and b.keyword is None and _stride_pair(a.value, b.value):
                what = f"launch: swap {tree.code(a.value)} and {tree.code(b.value)}"
                out.append(_rewrite("stride_args_swap", _swap(tree, call, i, i + 1), tree.line(a), what))
    return out


def _stride_index(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """`t.stride(0)` where `t.stride(1)` was meant, or the other way round."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for call in m.findall(tree.module, m.Call(func=m.Attribute(attr=m.Name("stride")))):
        assert isinstance(call, cst.Call)
        if len(call.args) != 1 or not isinstance(call.args[0].value, cst.Integer):
            continue
        index = call.args[0].value
        swapped = {"0": "1", "1": "0", "-1": "-2", "-2": "-1"}.get(index.value)
        if swapped is None:
            continue
        new = tree.replace(index, index.with_changes(value=swapped))
        what = f"{tree.code(call)} -> stride({swapped})"
        out.append(_rewrite("stride_index", new, tree.line(call), what))
    return out


def _program_id_names(fn: cst.FunctionDef) -> set[str]:
    names = set()
    for targets, value in _assignments(fn.body):
        if _calls(value, "tl.program_id"):
            names |= targets
    return names


def _row_times_stride(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """`row * n_cols` addresses a packed tensor: use the row stride the kernel receives."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        params = [p.name.value for p in _params(fn)]
        strides = [p for p in params if "stride" in p.lower()]
        plain = {
            p for p in params if "stride" not in p.lower() and "ptr" not in p.lower()
        } - _constexpr_params(fn)
        rows = _program_id_names(fn) | {"row", "row_idx", "pid"}
        if not strides:
            continue
        for op in m.findall(fn.body, m.BinaryOperation(operator=m.Multiply())):
            assert isinstance(op, cst.BinaryOperation)
            for row, size in ((op.left, op.right), (op.right, op.left)):
                if (
                    isinstance(row, cst.Name | cst.Call)
                    and isinstance(size, cst.Name)
                    and size.value in plain
                ):
                    if isinstance(row, cst.Name) and row.value not in rows:
                        continue
                    if isinstance(row, cst.Call) and _dotted(row.func) != "tl.program_id":
                        continue
                    for stride in strides:
                        new = tree.replace(size, size.with_changes(value=stride))
                        what = f"{fn.name.value}: {tree.code(op)} uses {stride}, not {size.value}"
                        out.append(_rewrite("row_times_stride", new, tree.line(size), what))
    return out


# ---------------------------------------------------------------- K loop


def _k_loop_advance(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """`a_ptrs += BLOCK_K` moves by elements of the pointer's first axis: scale by the K stride."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        strides = [p.name.value for p in _params(fn) if "stride" in p.name.value.lower()]
        k_strides = [s for s in strides if s.lower().endswith("k")] or strides
        constexpr = _constexpr_params(fn)
        for loop in _for_loops(fn):
            for node in m.findall(loop.body, m.AugAssign(operator=m.AddAssign())):
                assert isinstance(node, cst.AugAssign)
                step = node.value
                if not (isinstance(step, cst.Name) and (step.value in constexpr or "BLOCK" in step.value)):
                    continue
                target = _render(node.target)
                ranked = sorted(
                    k_strides,
                    key=lambda s, t=target: 0 if s.lower().replace("stride_", "")[:1] == t[:1] else 1,
                )
                for stride in ranked:
                    new = tree.replace(step, _expr(f"{step.value} * {stride}"))
                    what = f"{fn.name.value}: {target} advances by {step.value} * {stride}"
                    out.append(_rewrite("k_loop_advance", new, tree.line(step), what))
    return out


def _k_loop_tail(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """K loops round up (`tl.cdiv`) and mask the last partial K block of both operands."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        values = _values_of(fn)
        k_offsets = {n for n, vs in values.items() if len(vs) == 1 and _is_arange(vs[0])}
        for loop in _for_loops(fn):
            it = loop.iter
            if not (
                isinstance(it, cst.Call) and _dotted(it.func) in ("range", "tl.range", "tl.static_range")
            ):
                continue
            bounds = [a.value for a in it.args if a.keyword is None]
            stop = bounds[1] if len(bounds) >= 2 else bounds[0] if bounds else None
            if isinstance(stop, cst.Name) and len(values.get(stop.value, [])) == 1:
                # `n_tiles = K // BLOCK_K; for k in range(n_tiles)`: the trip count is the assigned value.
                stop = values[stop.value][0]
            if isinstance(stop, cst.BinaryOperation) and isinstance(stop.operator, cst.FloorDivide):
                call = _expr(f"tl.cdiv({_render(stop.left)}, {_render(stop.right)})")
                new = tree.replace(stop, call)
                out.append(
                    _rewrite("k_loop_tail", new, tree.line(stop), f"K loop: {tree.code(stop)} -> cdiv")
                )
                k_total, block = _render(stop.left), _render(stop.right)
            elif (
                isinstance(stop, cst.Call)
                and _dotted(stop.func) in ("tl.cdiv", "triton.cdiv")
                and len(stop.args) == 2
            ):
                k_total, block = _render(stop.args[0].value), _render(stop.args[1].value)
            elif len(bounds) == 3 and stop is not None:
                k_total, block = _render(stop), ""
            else:
                continue
            k = _render(loop.target)
            left = f"{k_total} - {k} * {block}" if block else f"{k_total} - {k}"
            # K offsets built inside the loop from the loop variable are absolute: compare them with K itself.
            absolute = {
                n
                for n, vs in values.items()
                if len(vs) == 1
                and not _is_arange(vs[0])
                and _calls(vs[0], "tl.arange")
                and k in _names(vs[0])
            }
            masked: dict[cst.CSTNode, cst.CSTNode] = {}
            for load in _calls(loop.body, "tl.load"):
                pointer = _arg(load, "pointer", 0)
                if pointer is None:
                    continue
                subs: list[tuple[cst.BaseExpression, bool]] = []
                for name in _names(pointer.value):
                    for v in [pointer.value, *values.get(name, [])]:
                        for sub in m.findall(v, m.Subscript()):
                            assert isinstance(sub, cst.Subscript)
                            inner = _names(sub.value)
                            if inner & (k_offsets | absolute):
                                # `(k + offs_k)[None, :]` is absolute too: it already adds the loop variable.
                                subs.append((sub, bool(inner & absolute) or k in inner))
                if not subs:
                    # A 1-D tile uses the offsets name itself, without a broadcast subscript.
                    flat = [
                        n
                        for v in [
                            pointer.value,
                            *(
                                values.get(x, [])[0]
                                for x in _names(pointer.value)
                                if len(values.get(x, [])) == 1
                            ),
                        ]
                        for n in sorted(_names(v) & (k_offsets | absolute))
                    ]
                    subs = [(cst.Name(flat[0]), flat[0] in absolute)] if flat else []
                if not subs:
                    continue
                sub, is_absolute = subs[0]
                tail = f"{_render(sub)} < {k_total if is_absolute else left}"
                old_mask = _arg(load, "mask", 1)
                if old_mask is None:
                    new_load = _with_kwarg(_with_kwarg(load, "mask", tail), "other", "0.0")
                elif _names(old_mask.value) & (k_offsets | absolute):
                    continue  # already masks the K axis
                else:
                    both = cst.parse_expression(f"({_render(old_mask.value)}) & ({tail})")
                    new_load = load.with_changes(
                        args=[a.with_changes(value=both) if a is old_mask else a for a in load.args]
                    )
                    if _arg(load, "other", 2) is None:
                        new_load = _with_kwarg(new_load, "other", "0.0")
                masked[load] = new_load
                new = tree.replace(load, new_load)
                what = f"{fn.name.value}: mask the K tail of the load ({tail})"
                out.append(_rewrite("k_loop_tail", new, tree.line(load.args[-1], end=True), what))
            if len(masked) > 1:
                # Both operands of a dot need the tail mask: one masked operand still multiplies garbage.
                first = next(iter(masked))
                new = _replace_many(tree.module, masked)
                what = f"{fn.name.value}: mask the K tail of all {len(masked)} loads in the loop"
                out.append(_rewrite("k_loop_tail", new, tree.line(first), what))
            floor = isinstance(stop, cst.BinaryOperation) and isinstance(stop.operator, cst.FloorDivide)
            if masked and floor and stop is not None:
                # Rounding the trip count up only helps once the extra block's loads are masked: do both.
                rounded = {stop: _expr(f"tl.cdiv({k_total}, {block})"), **masked}
                new = _replace_many(tree.module, rounded)
                what = f"{fn.name.value}: K loop rounds up (cdiv) and masks the tail of {len(masked)} loads"
                out.append(_rewrite("k_loop_tail", new, tree.line(stop), what))
    return out


class _ReplaceMany(cst.CSTTransformer):
    def __init__(self, mapping: dict[cst.CSTNode, cst.CSTNode]) -> None:
        self.mapping = mapping

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        return self.mapping.get(original_node, updated_node)


def _replace_many(module: cst.Module, mapping: dict[cst.CSTNode, cst.CSTNode]) -> cst.Module:
    """`module` with several nodes (by identity) replaced at once."""
    return module.visit(_ReplaceMany(mapping))


# ---------------------------------------------------------------- program ids, reduction axis, broadcast


def _program_id_swap(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """pid_m and pid_n read from each other's grid axis: swap axes 0 and 1 throughout the kernel."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        sites = []
        for call in _calls(fn.body, "tl.program_id"):
            axis = _arg(call, "axis", 0)
            if axis is not None and isinstance(axis.value, cst.Integer) and axis.value.value in ("0", "1"):
                sites.append(axis.value)
        if {s.value for s in sites} != {"0", "1"}:
            continue

        class Swap(cst.CSTTransformer):
            def __init__(self, sites: list[cst.Integer]) -> None:
                super().__init__()
                self.sites = sites

            def leave_Integer(self, original: cst.Integer, updated: cst.Integer) -> cst.Integer:
                if any(original is s for s in self.sites):
                    return updated.with_changes(value="1" if original.value == "0" else "0")
                return updated

        new_fn = fn.visit(Swap(sites))
        new = tree.replace(fn, new_fn)
        line = min(tree.line(s) for s in sites)
        out.append(_rewrite("program_id_swap", new, line, f"{fn.name.value}: swap program_id axes 0 and 1"))
    return out


_REDUCTIONS = ("tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin", "tl.cumsum", "tl.cumprod", "tl.reduce")


def _reduction_axis(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for call in _calls(tree.module, *_REDUCTIONS):
        axis = _arg(call, "axis", 1)
        if axis is None or not isinstance(axis.value, cst.Integer) or axis.value.value not in ("0", "1"):
            continue
        other = "1" if axis.value.value == "0" else "0"
        new = tree.replace(axis.value, axis.value.with_changes(value=other))
        what = f"{_dotted(call.func)}: reduce over axis {other}, not {axis.value.value}"
        out.append(_rewrite("reduction_axis", new, tree.line(axis.value), what))
    return out


def _bias_broadcast_axis(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """A per-column bias broadcast as `b[:, None]` (per row), or the other way round."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        values = _values_of(fn)
        biases = {
            n
            for n, vs in values.items()
            if "bias" in n.lower()
            or any(
                "bias" in p.lower() or p.lower() in ("b", "b_ptr")
                for v in vs
                for ld in _calls(v, "tl.load")
                for p in _names(ld)
            )
        }
        for sub in m.findall(fn.body, m.Subscript(value=m.Name())):
            assert isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name)
            if sub.value.value not in biases or len(sub.slice) != 2:
                continue
            parts = [_render(s.slice).strip() for s in sub.slice]
            if sorted(parts) != [":", "None"]:
                continue
            flipped = _expr(f"{sub.value.value}[{parts[1]}, {parts[0]}]")
            what = f"{fn.name.value}: broadcast {sub.value.value} along the other axis"
            out.append(_rewrite("bias_broadcast_axis", tree.replace(sub, flipped), tree.line(sub), what))
    return out


# ---------------------------------------------------------------- operator formulas

_MODULES = {"tl", "triton", "math", "libdevice", "float", "torch", "self"}


def _vars(expr: cst.CSTNode) -> set[str]:
    return {n for n in _names(expr) if n not in _MODULES and not n.isupper()}


def _calls_ending(root: cst.CSTNode, suffix: str) -> list[cst.Call]:
    return [
        c
        for c in m.findall(root, m.Call())
        if isinstance(c, cst.Call) and (_dotted(c.func) or "").split(".")[-1] == suffix
    ]


_GELU_TANH = "{x} * tl.sigmoid(1.5957691216057308 * ({x} + 0.044715 * {x} * {x} * {x}))"
_GELU_ERF = "0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))"


def _gelu_form(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """GELU's exact erf form vs the tanh approximation (0.5x(1+tanh(z)) == x*sigmoid(2z))."""
    tree = _tree(source)
    if tree is None:
        return []
    want_tanh = want_erf = True
    if context is not None and "gelu" in context.reference_source.lower():
        tanh = bool(re.search(r"approximate\s*=\s*['\"]tanh['\"]", context.reference_source))
        want_tanh, want_erf = tanh, not tanh
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        for _, value in _assignments(fn.body):
            erf = _calls_ending(value, "erf")
            is_tanh = bool(_calls_ending(value, "tanh")) or "0.044715" in _render(value)
            template = _GELU_TANH if erf and want_tanh else _GELU_ERF if is_tanh and want_erf else None
            if template is None:
                continue
            xs = _vars(erf[0].args[0].value if erf else value)
            if len(xs) != 1:
                continue
            new = tree.replace(value, _expr(template.format(x=xs.pop())))
            what = f"{fn.name.value}: GELU in its {'tanh' if erf else 'erf'} form, as the reference"
            out.append(_rewrite("gelu_form", new, tree.line(value), what))
    return out


def _silu_beta(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Swish is x * sigmoid(beta * x): beta goes inside the sigmoid."""
    tree = _tree(source)
    if tree is None:
        return []
    beta_value = None
    if context is not None:
        beta_value = next((v for k, v in context.init_params().items() if "beta" in k.lower()), None)
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        used = _names(fn.body)
        betas = [
            p.name.value for p in _params(fn) if "beta" in p.name.value.lower() and p.name.value not in used
        ]
        if not betas and isinstance(beta_value, int | float) and beta_value != 1:
            betas = [repr(float(beta_value))]
        for call in _calls_ending(fn.body, "sigmoid"):
            if not call.args or "beta" in _render(call.args[0].value).lower():
                continue
            arg = call.args[0].value
            for beta in betas:
                new = tree.replace(arg, _expr(f"{beta} * {_render(_paren(arg))}"))
                what = f"{fn.name.value}: sigmoid({beta} * ...), the Swish form"
                out.append(_rewrite("silu_beta", new, tree.line(arg), what))
    return out


def _float_literals(root: cst.CSTNode) -> list[cst.Float | cst.Integer]:
    return [n for n in m.findall(root, m.Float() | m.Integer()) if isinstance(n, cst.Float | cst.Integer)]


def _literal_value(node: cst.Float | cst.Integer) -> float | None:
    try:
        return float(node.value.replace("_", ""))
    except ValueError:
        return None


def _constructor_constant(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """A literal equal to a constructor default where the reference is built with another value."""
    tree = _tree(source)
    if tree is None or context is None:
        return []
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
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        for lit in _float_literals(fn.body):
            value = _literal_value(lit)
            for name, (default, actual) in changed.items():
                if value is not None and value == float(default) and value not in (0.0, 1.0):
                    new = tree.replace(lit, _expr(repr(actual)))
                    what = f"{fn.name.value}: {lit.value} is {name}'s default; the model uses {actual!r}"
                    out.append(_rewrite("constructor_constant", new, tree.line(lit), what))
    return out


def _within_call(tree: _Tree, node: cst.CSTNode, name: str) -> bool:
    parent = tree.parent(node)
    while parent is not None:
        if isinstance(parent, cst.Call) and _dotted(parent.func) == name:
            return True
        parent = tree.parent(parent)
    return False


def _softplus_threshold(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """softplus returns x above the threshold (20 by default) instead of log(1 + exp(x))."""
    tree = _tree(source)
    if tree is None:
        return []
    threshold = 20.0
    if context is not None:
        found = re.search(r"threshold\s*=\s*([0-9.]+)", context.reference_source)
        value = context.init_params().get("threshold")
        threshold = (
            float(value) if isinstance(value, int | float) else float(found.group(1)) if found else 20.0
        )
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        for log in _calls(fn.body, "tl.log", "tl.math.log", "tl.log1p", "tl.math.log1p"):
            exps = _calls(log, *_EXP)
            if not exps or not exps[0].args or _within_call(tree, log, "tl.where"):
                continue
            x = _render(exps[0].args[0].value)
            wrapped = _expr(f"tl.where({x} > {threshold!r}, {x}, {tree.code(log)})")
            what = f"{fn.name.value}: softplus returns {x} above {threshold}"
            out.append(_rewrite("softplus_threshold", tree.replace(log, wrapped), tree.line(log), what))
    return out


def _scan_exclusive(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Inclusive vs exclusive prefix sum: `cumsum(x)` <-> `cumsum(x) - x`."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
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
            out.append(_rewrite("scan_exclusive", new, tree.line(parent), f"inclusive scan: drop '- {x}'"))
        else:
            new = tree.replace(call, _expr(f"({tree.code(call)} - {x})"))
            out.append(_rewrite("scan_exclusive", new, tree.line(call), f"exclusive scan: cumsum({x}) - {x}"))
    return out


# ---------------------------------------------------------------- wrapper (host side)

_ALLOCATORS = ("torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_strided")
_LIKE = ("torch.empty_like", "torch.zeros_like", "torch.ones_like", "torch.full_like")


def _tensor_params(fn: cst.FunctionDef) -> list[str]:
    return [
        p.name.value
        for p in _params(fn)
        if p.name.value != "self" and not (p.annotation and _dotted(p.annotation.annotation) in _SCALAR_TYPES)
    ]


def _without_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    args = [a for a in call.args if a is not arg]
    if args and call.args[-1] is arg:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def _output_dtype(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """The output is allocated in the input's dtype, not a hard-coded one."""
    tree = _tree(source)
    fn = _forward(tree.module) if tree is not None else None
    if tree is None or fn is None:
        return []
    tensors = _tensor_params(fn)
    if not tensors:
        return []
    x = tensors[0]
    out: list[Rewrite] = []
    for call in _calls(fn.body, *_ALLOCATORS, *_LIKE):
        dtype = _arg(call, "dtype", 99)
        like = _dotted(call.func) in _LIKE
        if dtype is not None and (_dotted(dtype.value) or "").startswith("torch."):
            if like:
                new, what = tree.replace(call, _without_arg(call, dtype)), "drop the hard-coded dtype"
            else:
                new, what = tree.replace(dtype.value, _expr(f"{x}.dtype")), f"dtype={x}.dtype"
        elif dtype is None and not like:
            new, what = tree.replace(call, _with_kwarg(call, "dtype", f"{x}.dtype")), f"add dtype={x}.dtype"
        else:
            continue
        out.append(_rewrite("output_dtype", new, tree.line(call), f"ModelNew.forward: {what}"))
    return out


def _conv_output_size(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Output size of a conv/pool: (H + 2*p - d*(k-1) - 1) // s + 1, with the terms the code names."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
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
            for n in m.findall(numerator, m.Name() | m.Attribute() | m.Subscript())
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
        out.append(_rewrite("conv_output_size", new, tree.line(value), f"output size: {canonical}"))
    return out


def _count_forms(x: str) -> list[str]:
    return [f"{x}.numel()", f"{x}.shape[0]", f"{x}.shape[-1]"]


def _loss_mean_count(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """A mean divides by the count the reference averages over: all elements vs the batch vs a row."""
    tree = _tree(source)
    fn = _forward(tree.module) if tree is not None else None
    if tree is None or fn is None:
        return []
    tensors = _tensor_params(fn)
    forms = [f for x in tensors for f in _count_forms(x)]
    out: list[Rewrite] = []
    for div in m.findall(fn.body, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        current = _render(div.right).replace("size(0)", "shape[0]").replace(" ", "")
        if current not in forms:
            continue
        for form in forms:
            if form != current:
                new = tree.replace(div.right, _expr(form))
                out.append(_rewrite("loss_mean_count", new, tree.line(div.right), f"mean over {form}"))
    return out


# ---------------------------------------------------------------- pooling and losses


def _is_count_name(name: str) -> bool:
    low = name.lower()
    return "count" in low or "cnt" in low or low in ("n_valid", "valid_count", "num_valid")


def _count_include_pad(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Average pooling divides by the window area (count_include_pad=True) or by the valid-element count."""
    tree = _tree(source)
    if tree is None:
        return []
    want_area = want_count = True
    if context is not None and "count_include_pad" in context.reference_source:
        exclude = re.search(r"count_include_pad\s*=\s*False", context.reference_source) is not None
        exclude = exclude or context.init_params().get("count_include_pad") is False
        want_area, want_count = not exclude, exclude
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        window = [
            p.name.value
            for p in _params(fn)
            if "kernel" in p.name.value.lower() or p.name.value in ("K", "KH", "KW")
        ]
        counts = [n for n in _values_of(fn) if _is_count_name(n)]
        area = (
            f"{window[0]} * {window[1]}"
            if len(window) >= 2
            else f"{window[0]} * {window[0]}"
            if window
            else None
        )
        for div in m.findall(fn.body, m.BinaryOperation(operator=m.Divide())):
            assert isinstance(div, cst.BinaryOperation)
            divisor = _render(div.right).strip("() ")
            if isinstance(div.right, cst.Name) and _is_count_name(div.right.value) and area and want_area:
                new, what = tree.replace(div.right, _expr(f"({area})")), f"divide by the window area {area}"
            elif area and divisor.replace(" ", "") == area.replace(" ", "") and counts and want_count:
                new, what = (
                    tree.replace(div.right, _expr(counts[0])),
                    f"divide by the valid count {counts[0]}",
                )
            else:
                continue
            out.append(_rewrite("count_include_pad", new, tree.line(div.right), f"{fn.name.value}: {what}"))
    return out


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


def _ignore_index(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """Targets equal to ignore_index contribute nothing: zero their loss before it is stored or summed."""
    tree = _tree(source)
    if tree is None:
        return []
    out: list[Rewrite] = []
    for fn in _kernels(tree.module):
        ignore = _ignore_value(fn, context)
        if ignore is None or f"!= {ignore}" in tree.code(fn) or f"== {ignore}" in tree.code(fn):
            continue
        targets = [
            t
            for targets_, value in _assignments(fn.body)
            for load in _calls(value, "tl.load")
            if any(k in n.lower() for n in _names(load) for k in ("target", "label", "tgt"))
            for t in sorted(targets_)
        ]
        if not targets:
            continue
        for call in _calls(fn.body, "tl.store", "tl.sum"):
            value = _arg(call, "value", 1) if _dotted(call.func) == "tl.store" else _arg(call, "input", 0)
            if value is None or targets[0] in _names(value.value) and _calls(value.value, "tl.load"):
                continue
            wrapped = _expr(f"tl.where({targets[0]} != {ignore}, {_render(value.value)}, 0.0)")
            what = f"{fn.name.value}: ignore targets equal to {ignore}"
            out.append(_rewrite("ignore_index", tree.replace(value.value, wrapped), tree.line(value), what))
    return out


def _affine_both(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    return _affine_weight_bias(source, context) + _affine_launch_args(source, context)


def _affine_launch_args(source: str, context: RuleContext | None = None) -> list[Rewrite]:
    """The wrapper passes None where the kernel expects the module's weight or bias."""
    tree = _tree(source)
    if tree is None:
        return []
    kernels = {fn.name.value: [p.name.value for p in _params(fn)] for fn in _kernels(tree.module)}
    attributes: dict[str, str] = {}
    for cls in m.findall(tree.module, m.ClassDef(name=m.Name("ModelNew"))):
        for target in m.findall(cls, m.Attribute(value=m.Name("self"))):
            assert isinstance(target, cst.Attribute)
            role = _role(target.attr.value)
            if role is not None:
                attributes.setdefault(role, f"self.{target.attr.value}")
    out: list[Rewrite] = []
    for call in _launches(tree.module):
        assert isinstance(call.func, cst.Subscript)
        params = kernels.get(_render(call.func.value), [])
        positional = [a for a in call.args if a.keyword is None and not a.star]
        for param, arg in zip(params, positional, strict=False):
            role = _role(param)
            if role in attributes and isinstance(arg.value, cst.Name) and arg.value.value == "None":
                new = tree.replace(arg.value, _expr(attributes[role]))
                what = f"launch: pass {attributes[role]} as {param}"
                out.append(_rewrite("affine_weight_bias", new, tree.line(arg), what))
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
        Rule(
            "load_mask",
            "tl.load masked like the kernel's other accesses",
            "tail_mask",
            ("tail_block", "trailing", "garbage_region", "shape", "runtime_error", "crash"),
            _load_mask,
        ),
        Rule(
            "mask_precedence",
            "parenthesise `a < M & b < N` into `(a < M) & (b < N)`",
            "tail_mask",
            ("tail_block", "trailing", "garbage_region", "shape", "rows", "columns"),
            _mask_precedence,
        ),
        Rule(
            "mask_offsets",
            "bounds mask built from the right (local vs global) offsets",
            "tail_mask",
            ("tail_block", "rows", "leading", "zero_region", "untouched_region", "shape"),
            _mask_offsets,
        ),
        Rule(
            "neutral_other_exp",
            "masked load feeding tl.exp pads with -inf",
            "neutral_element",
            ("rows", "everywhere", "constant_ratio", "shape", "tail_block"),
            _neutral_other_exp,
        ),
        Rule(
            "neutral_other_sum",
            "masked load feeding a sum or dot pads with 0",
            "neutral_element",
            ("rows", "everywhere", "tail_block", "shape", "constant_offset"),
            _neutral_other_sum,
        ),
        Rule(
            "softmax_max_subtraction",
            "subtract the row max before tl.exp (softmax, logsumexp)",
            "numerical_stability",
            ("x100", "heavy_tailed", "scattered", "rows", "nan", "inf"),
            _softmax_max_subtraction,
        ),
        Rule(
            "online_softmax_rescale",
            "rescale the running sum/accumulator by exp(m_old - m_new)",
            "numerical_stability",
            ("everywhere", "rows", "shape", "grows_with_magnitude", "x100"),
            _online_softmax_rescale,
        ),
        Rule(
            "fp32_upcast_load",
            "upcast loads to float32 before reducing",
            "accumulation_precision",
            ("grows_with_magnitude", "x100", "scattered", "everywhere"),
            _fp32_upcast_load,
        ),
        Rule(
            "dot_ieee",
            'tl.dot with input_precision="ieee" (no TF32)',
            "accumulation_precision",
            ("grows_with_magnitude", "scattered", "everywhere"),
            _dot_ieee,
        ),
        Rule(
            "variance_bias",
            "biased vs unbiased variance (/ N vs / (N - 1))",
            "normalisation",
            ("everywhere", "rows", "constant_ratio"),
            _variance_bias,
        ),
        Rule(
            "mask_centered",
            "zero padded lanes of x - mean before the variance",
            "normalisation",
            ("everywhere", "rows", "shifted_mean", "shape", "tail_block"),
            _mask_centered,
        ),
        Rule(
            "affine_weight_bias",
            "apply the affine weight/bias the kernel receives",
            "normalisation",
            ("everywhere", "rows", "columns", "constant_offset"),
            _affine_both,
        ),
        Rule(
            "stride_args_swap",
            "launch passes a stride pair in the kernel's order",
            "strides_layout",
            ("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered"),
            _stride_args_swap,
        ),
        Rule(
            "stride_index",
            "stride(0) vs stride(1)",
            "strides_layout",
            ("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered", "rows"),
            _stride_index,
        ),
        Rule(
            "row_times_stride",
            "row offset uses the row stride, not the row length",
            "strides_layout",
            ("noncontig", "rows", "shifted", "rows_permuted", "periodic"),
            _row_times_stride,
        ),
        Rule(
            "k_loop_advance",
            "K-loop pointers advance by BLOCK_K * stride_k",
            "k_loop",
            ("grows_with_magnitude", "everywhere", "scattered", "shape"),
            _k_loop_advance,
        ),
        Rule(
            "k_loop_tail",
            "K loop rounds up and masks the last K block",
            "k_loop",
            ("shape", "everywhere", "scattered", "garbage_region"),
            _k_loop_tail,
        ),
        Rule(
            "program_id_swap",
            "pid_m / pid_n read the right grid axes",
            "grid_coverage",
            ("transposed", "shape", "untouched_region", "zero_region", "columns", "rows"),
            _program_id_swap,
        ),
        Rule(
            "reduction_axis",
            "reduce over the other axis",
            "strides_layout",
            ("transposed", "columns", "rows", "shape", "everywhere"),
            _reduction_axis,
        ),
        Rule(
            "bias_broadcast_axis",
            "bias broadcast along the other axis",
            "strides_layout",
            ("columns", "rows", "periodic", "everywhere"),
            _bias_broadcast_axis,
        ),
        Rule(
            "gelu_form",
            "GELU erf vs tanh approximation, as the reference",
            "operator_misread",
            ("everywhere", "scattered", "x100"),
            _gelu_form,
        ),
        Rule(
            "silu_beta",
            "Swish: beta inside the sigmoid",
            "operator_misread",
            ("everywhere", "scattered"),
            _silu_beta,
        ),
        Rule(
            "constructor_constant",
            "constant from the reference's constructor arguments, not the default",
            "operator_misread",
            ("everywhere", "scattered", "all_negative", "constant_ratio"),
            _constructor_constant,
        ),
        Rule(
            "softplus_threshold",
            "softplus returns x above its threshold",
            "numerical_stability",
            ("x100", "heavy_tailed", "scattered", "inf", "nan"),
            _softplus_threshold,
        ),
        Rule(
            "scan_exclusive",
            "inclusive vs exclusive prefix sum",
            "operator_misread",
            ("everywhere", "shifted", "constant_offset", "equals_input"),
            _scan_exclusive,
        ),
        Rule(
            "output_dtype",
            "output allocated in the input's dtype",
            "wrapper",
            ("dtype_mismatch",),
            _output_dtype,
        ),
        Rule(
            "conv_output_size",
            "conv/pool output size (H + 2p - d(k-1) - 1) // s + 1",
            "operator_misread",
            ("shape_mismatch", "shape"),
            _conv_output_size,
        ),
        Rule(
            "loss_mean_count",
            "mean over the count the reference averages over",
            "operator_misread",
            ("constant_ratio", "everywhere"),
            _loss_mean_count,
        ),
        Rule(
            "count_include_pad",
            "average pool divides by the window area or the valid count, as the reference",
            "operator_misread",
            ("tail_block", "rows", "columns", "leading", "trailing", "constant_ratio"),
            _count_include_pad,
        ),
        Rule(
            "ignore_index",
            "targets equal to ignore_index add no loss",
            "operator_misread",
            ("scattered", "everywhere", "constant_offset"),
            _ignore_index,
        ),
    )
}
