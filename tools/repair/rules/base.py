"""Rule machinery and the libcst helpers every rule family shares.

Rules transform text through libcst, so untouched code keeps its exact formatting and diffs stay minimal.
They never run the candidate: the repair engine evaluates every proposal and keeps what improves the score.
A rule is its pattern and its edit: one generator under `@rule(...)` that yields an `Edit` per site it
matches; the optional `RuleContext` carries what only the reference knows (constructor arguments, eps,
reduction mode).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.rules.splice import Splicer
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider


@dataclass(frozen=True)
class Rewrite:
    rule: str
    description: str
    source: str  # the complete new source
    line: int  # 1-based line of the change in the original
    also: tuple[int, ...] = ()  # other original lines it changes (a swap of two statements), for ranking


@dataclass(frozen=True)
class RuleContext:
    """The reference's semantics: its source and the constructor arguments it is built with."""

    reference_source: str = ""
    init_args: tuple[Any, ...] = ()
    output_dtype: str = ""  # the reference output's dtype ("int64"), when an evaluation reported it
    # The report's crash record as JSON (crash rules read it through `crash`); "" when nothing crashed.
    crash_json: str = ""
    # What the judge said of the inputs (`input_modified:0`, `input_update_wrong:1`), for the in-place rules.
    input_effects: tuple[str, ...] = ()

    @classmethod
    def from_reference(cls, reference_source: str, report: dict[str, Any] | None = None) -> RuleContext:
        """Read `get_init_inputs()` statically (literals, module constants): the reference never runs here."""
        crash = (report or {}).get("crash") if isinstance(report, dict) else None
        return cls(
            reference_source,
            _static_init_args(reference_source),
            _reference_dtype(report or {}),
            json.dumps(crash, sort_keys=True, default=str) if crash else "",
            _input_effects(report or {}),
        )

    @property
    def crash(self) -> dict[str, Any]:
        """The crash the candidate shows (class, line, exception, message...): crash rules act only on one."""
        return json.loads(self.crash_json) if self.crash_json else {}

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

    def inputs_with(self, effect: str) -> list[int]:
        """Positions of the inputs reported with `effect` (`input_modified`, `input_update_wrong`)."""
        return sorted({int(e.split(":", 1)[1]) for e in self.input_effects if e.split(":", 1)[0] == effect})

    def mentions(self, text: str) -> bool:
        return text in self.reference_source


def _input_effects(report: Any) -> tuple[str, ...]:
    if not isinstance(report, dict):
        return ()
    found = {
        rel
        for case in report.get("cases") or []
        if isinstance(case, dict) and case.get("counted", True)
        for rel in case.get("relationships") or []
        if isinstance(rel, str) and re.fullmatch(r"input_(modified|update_wrong):\d+", rel)
    }
    return tuple(sorted(found))


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
    text: bool = False  # works on the text: the one kind of rule offered for a source that does not parse


# ---------------------------------------------------------------- shared helpers


class Tree:
    """A parsed source with line positions; an edit replaces one node and yields the new source."""

    def __init__(self, source: str) -> None:
        wrapper = MetadataWrapper(cst.parse_module(source))
        self.source = source
        self.module = wrapper.module
        self._positions = wrapper.resolve(PositionProvider)
        self._parents = wrapper.resolve(ParentNodeProvider)
        self._splicer: Splicer | None = None

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def insert_before(self, node: cst.CSTNode, *statements: str) -> tuple[cst.Module | str, int] | None:
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
        return self.spliced(block, block.with_changes(body=body)), self.line(stmt)

    def line(self, node: cst.CSTNode, end: bool = False) -> int:
        pos = self._positions[node]
        return pos.end.line if end else pos.start.line

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def replace(self, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
        return self.module.deep_replace(old, new)  # type: ignore[return-value]

    def spliced(self, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module | str:
        """What `replace` gives, as code where a text splice gives it exactly (many times cheaper)."""
        if self._splicer is None:
            self._splicer = Splicer(self.module)
        code = self._splicer.replace(old, new)
        return self.replace(old, new) if code is None else code

    def edit(
        self,
        old: cst.CSTNode,
        new: cst.CSTNode,
        what: str,
        line: int | None = None,
        also: tuple[int, ...] = (),
    ) -> Edit:
        """`old` replaced by `new`, at `line` (default: `old`'s first line), changing the `also` lines too."""
        return Edit(self.spliced(old, new), self.line(old) if line is None else line, what, also)


@lru_cache(maxsize=8)
def _tree(source: str) -> Tree | None:
    # Trees are immutable, so every rule can share one parse of the same source.
    try:
        return Tree(source)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None


@dataclass(frozen=True)
class Edit:
    """What a rule offers at one site: the whole new module (or its code), the original line it changes, what
    it does."""

    module: cst.Module | str
    line: int
    what: str
    also: tuple[int, ...] = ()  # other original lines the edit changes

    @property
    def code(self) -> str:
        return self.module if isinstance(self.module, str) else self.module.code


Match = Callable[..., Iterator[Edit]]  # (tree, [fn,] context) -> the edits at the sites it matches
_FAILURES = (AssertionError, AttributeError, IndexError, KeyError, TypeError, ValueError, RecursionError)
_REGISTERED: dict[str, list[Rule]] = {}


def rule(
    id: str,
    *,
    title: str,
    bug_class: str,
    symptoms: tuple[str, ...] = (),
    per: Literal["kernel", "forward", "module", "text"] = "kernel",
    guarded: bool = False,
) -> Callable[[Match], Rule]:
    """Make a `Rule` of a generator of edits and register it with its module's `rules_of`.

    The generator gets the parsed source and the context, and also each `@triton.jit` kernel in turn
    (`per="kernel"`) or `ModelNew.forward` (`per="forward"`, skipped when absent); `per="module"` gets the
    whole module once; `per="text"` gets the source text itself, parsed or not. Otherwise unparsable source
    proposes nothing; so does a `guarded` rule that meets code it cannot read, rather than stopping the repair
    loop.
    """

    def register(match: Match) -> Rule:
        def apply(source: str, context: RuleContext | None = None) -> list[Rewrite]:
            tree = _tree(source) if per != "text" else None
            if tree is None and per != "text":
                return []
            try:
                edits = list(match(source, context) if tree is None else _edits(match, per, tree, context))
            except (*_FAILURES, cst.ParserSyntaxError):
                if not guarded:
                    raise
                return []
            return [Rewrite(id, f"{e.what} (line {e.line})", e.code, e.line, e.also) for e in edits]

        apply.__name__ = apply.__qualname__ = match.__name__
        made = Rule(id, title, bug_class, symptoms, apply, text=per == "text")
        _REGISTERED.setdefault(match.__module__, []).append(made)
        return made

    return register


def _edits(match: Match, per: str, tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    if per == "module":
        yield from match(tree, context)
    elif per == "forward":
        fn = _forward(tree.module)
        if fn is not None:
            yield from match(tree, fn, context)
    else:
        for fn in _kernels(tree.module):
            yield from match(tree, fn, context)


def rules_of(name: str) -> tuple[Rule, ...]:
    """The rules defined with `@rule` in module `name`, or in the modules of package `name` imported yet."""
    return tuple(
        r for module, rules in _REGISTERED.items() if f"{module}.".startswith(f"{name}.") for r in rules
    )


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


def _per_node(find: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
    """`find` remembered for the last few nodes it searched: the rules of one source ask the same searches of
    the same (immutable) tree hundreds of times, and each search walks all of it."""
    found: dict[int, tuple[cst.CSTNode, list[Any]]] = {}

    def cached(root: Any) -> list[Any]:
        hit = found.get(id(root))
        if hit is None or hit[0] is not root:  # the node is held, so its id is not reused while cached
            if len(found) >= 64:
                found.pop(next(iter(found)))
            hit = found[id(root)] = (root, find(root))
        return list(hit[1])  # a copy: callers may change the list

    cached.__doc__, cached.__name__ = find.__doc__, find.__name__
    return cached


@_per_node
def _all_calls(root: cst.CSTNode) -> list[tuple[str | None, cst.Call]]:
    return [(_dotted(c.func), c) for c in findall(root, m.Call()) if isinstance(c, cst.Call)]


def _calls(root: cst.CSTNode, *names: str) -> list[cst.Call]:
    return [c for name, c in _all_calls(root) if name in names]


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


@_per_node
def _kernels(module: cst.Module) -> list[cst.FunctionDef]:
    """Functions decorated with `@triton.jit` / `@jit` (with or without arguments)."""
    out = []
    for fn in findall(module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        for d in fn.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if (_dotted(target) or "").split(".")[-1] == "jit":
                out.append(fn)
                break
    return out


_DOCSTRING = m.SimpleStatementLine(body=[m.Expr(m.SimpleString() | m.ConcatenatedString())])


def _after_docstring(body: cst.IndentedBlock) -> int:
    """Index of the first statement of `body` after its docstring: where a prologue goes."""
    return 1 if body.body and m.matches(body.body[0], _DOCSTRING) else 0


def _params(fn: cst.FunctionDef) -> list[cst.Param]:
    p = fn.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]


@_per_node
def _assignments(root: cst.CSTNode) -> list[tuple[set[str], cst.BaseExpression]]:
    """(target names, value) for every plain, annotated and augmented assignment under `root`."""
    out: list[tuple[set[str], cst.BaseExpression]] = []
    for node in findall(root, m.Assign() | m.AnnAssign() | m.AugAssign()):
        if isinstance(node, cst.Assign):
            targets = set().union(*(_names(t.target) for t in node.targets))
            out.append((targets, node.value))
        elif isinstance(node, cst.AnnAssign | cst.AugAssign) and node.value is not None:
            out.append((_names(node.target), node.value))
    return out


def _reachable(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _forward(module: cst.Module) -> cst.FunctionDef | None:
    for cls in findall(module, m.ClassDef(name=m.Name("ModelNew"))):
        assert isinstance(cls, cst.ClassDef)
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward":
                return stmt
    return None


# ---------------------------------------------------------------- contiguous_inputs

_SCALAR_TYPES = {"int", "float", "bool", "str"}


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


def _feeds(load: cst.Call, fn: cst.FunctionDef, tree: Tree) -> set[str]:
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


def _helper_reads(tree: Tree, fn: cst.FunctionDef, consumers: tuple[str, ...]) -> list[tuple[str, set[str]]]:
    """Consumer calls (`tl.max`, `tl.exp`) inside the @triton.jit helpers `fn` calls, as (call name, names
    of `fn` handed to the parameters its first argument reads): a value the kernel hands `_update(m, s, x)`
    reaches the helper's `tl.max(x)` as if the kernel had written it there."""
    helpers = {k.name.value: k for k in _kernels(tree.module) if k is not fn}
    out: list[tuple[str, set[str]]] = []
    for call in _calls(fn.body, *helpers):
        helper = helpers[_dotted(call.func) or ""]
        params = [p.name.value for p in _params(helper)]
        edges = _flow(helper)
        handed = [
            (a.keyword.value if a.keyword else params[i] if i < len(params) else "", _names(a.value))
            for i, a in enumerate(call.args)
        ]
        for used in _calls(helper.body, *consumers):
            if not used.args:
                continue
            read = _names(used.args[0].value)
            names = set().union(*(n for p, n in handed if p and _reachable(p, edges) & read))
            if names:
                out.append((_dotted(used.func) or "", names))
    return out


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


def _mask_expressions(root: cst.Module | cst.FunctionDef) -> list[cst.BaseExpression]:
    """Expressions used as masks in each function of root: the values of its mask names (`_mask_names`:
    `m = (li >= 0) & (li <= L)` used as `mask=m` is one) and masks written in place as an argument (tl.load
    and tl.store take one positionally, any other call only as mask=)."""
    fns = [root] if isinstance(root, cst.FunctionDef) else findall(root, m.FunctionDef())
    found: list[cst.BaseExpression] = []
    seen: set[int] = set()
    for fn in fns:
        assert isinstance(fn, cst.FunctionDef)
        names = set(_mask_names(fn))
        exprs = [value for targets, value in _assignments(fn.body) if targets & names]
        for call in findall(fn.body, m.Call()):
            assert isinstance(call, cst.Call)
            position = {"tl.load": 1, "tl.store": 2}.get(_dotted(call.func) or "", len(call.args))
            arg = _arg(call, "mask", position)
            if arg is not None and not isinstance(arg.value, cst.Name):
                exprs.append(arg.value)
        # A nested function's masks are its enclosing function's too: each expression once.
        found += [e for e in exprs if id(e) not in seen]
        seen |= {id(e) for e in exprs}
    return found


def _for_loops(fn: cst.FunctionDef) -> list[cst.For]:
    return [f for f in findall(fn.body, m.For()) if isinstance(f, cst.For)]


def _inside(tree: Tree, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
    parent = tree.parent(node)
    while parent is not None and not isinstance(parent, kind):
        parent = tree.parent(parent)
    return parent


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, cst.BinaryOperation | cst.BooleanOperation | cst.Comparison | cst.UnaryOperation):
        if not expr.lpar:
            return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr


def _operand(expr: cst.BaseExpression) -> str:
    """`expr` as text that can take `.method()` or an operator: parenthesised unless it is atomic."""
    atomic = isinstance(expr, cst.Name | cst.Attribute | cst.Call | cst.Subscript) or bool(
        getattr(expr, "lpar", None)
    )
    return _render(expr) if atomic else f"({_render(expr)})"


def _launches(module: cst.Module) -> list[cst.Call]:
    """Kernel launches `kernel[grid](...)`."""
    return [c for _, c in _all_calls(module) if isinstance(c.func, cst.Subscript)]


def _swap(tree: Tree, call: cst.Call, i: int, j: int) -> cst.Module | str:
    args = list(call.args)
    a, b = args[i], args[j]
    args[i] = a.with_changes(value=b.value)
    args[j] = b.with_changes(value=a.value)
    return tree.spliced(call, call.with_changes(args=args))


class _ReplaceMany(cst.CSTTransformer):
    def __init__(self, mapping: dict[cst.CSTNode, cst.CSTNode]) -> None:
        self.mapping = mapping

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        return self.mapping.get(original_node, updated_node)


def _replace_many(module: cst.Module, mapping: dict[cst.CSTNode, cst.CSTNode]) -> cst.Module:
    """`module` with several nodes (by identity) replaced at once."""
    return module.visit(_ReplaceMany(mapping))


# ---------------------------------------------------------------- kernel facts


def _addends(expr: cst.BaseExpression) -> set[str]:
    """Names added at the top of `expr` (`K` and `offs` in `K + offs + i * stride`)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add | cst.Subtract):
        return _addends(expr.left) | _addends(expr.right)
    return {expr.value} if isinstance(expr, cst.Name) else set()


def _pointer_bases(fn: cst.FunctionDef) -> set[str]:
    """Names that address memory: the base of a load or store pointer, however the pointer is built."""
    values = _values_of(fn)
    todo = [
        a.value
        for c in _calls(fn.body, "tl.load", "tl.store", "tl.atomic_add")
        for a in c.args[:1]
        if a.keyword is None or a.keyword.value == "pointer"
    ]
    seen: set[str] = set()
    while todo:
        for name in _addends(todo.pop()) - seen:
            seen.add(name)
            todo.extend(values.get(name, []))
    return seen


def _scalar_params(fn: cst.FunctionDef) -> tuple[list[str], set[str]]:
    """Runtime integer-like parameters (not pointers, strides or float factors), and the constexpr ones."""
    constexpr = _constexpr_params(fn)
    pointers = _pointer_bases(fn)
    runtime = []
    for p in _params(fn):
        low = p.name.value.lower()
        if p.name.value in constexpr or p.name.value in pointers or "ptr" in low or "stride" in low:
            continue
        if low in ("p", "q") or any(
            k in low for k in ("eps", "scale", "alpha", "beta", "temp", "slope", "momentum", "norm", "power")
        ):
            continue
        if p.annotation is not None and (_dotted(p.annotation.annotation) or "") == "float":
            continue
        runtime.append(p.name.value)
    return runtime, constexpr


# ---------------------------------------------------------------- mask_offsets


def _is_arange(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and _dotted(expr.func) == "tl.arange"


def _scaled_by(text: str, name: str) -> bool:
    """Whether `text` multiplies something by `name` (`pid * BLOCK`, `BLOCK * pid`)."""
    n = re.escape(name)
    return re.search(rf"\*\s*{n}\b|\b{n}\s*\*", text) is not None


def _flow_names(fn: cst.FunctionDef) -> dict[str, set[str]]:
    """name -> every name its value is computed from (transitively, within the kernel)."""
    direct: dict[str, set[str]] = {}
    for targets, value in _assignments(fn.body):
        for t in targets:
            direct.setdefault(t, set()).update(_names(value))
    out: dict[str, set[str]] = {}
    for name in direct:
        seen, todo = {name}, [name]
        while todo:
            for nxt in direct.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        out[name] = seen
    return out


def _program_id_names(fn: cst.FunctionDef) -> set[str]:
    names = set()
    for targets, value in _assignments(fn.body):
        if _calls(value, "tl.program_id"):
            names |= targets
    return names


def _tensor_params(fn: cst.FunctionDef) -> list[str]:
    return [
        p.name.value
        for p in _params(fn)
        if p.name.value != "self" and not (p.annotation and _dotted(p.annotation.annotation) in _SCALAR_TYPES)
    ]


def _literal_value(node: cst.Float | cst.Integer) -> float | None:
    try:
        return float(node.value.replace("_", ""))
    except ValueError:
        return None


# ---------------------------------------------------------------- variance_bias


def _squares(expr: cst.BaseExpression) -> bool:
    for op in findall(expr, m.BinaryOperation()):
        assert isinstance(op, cst.BinaryOperation)
        if isinstance(op.operator, cst.Power):
            return True
        if isinstance(op.operator, cst.Multiply) and _render(op.left).strip("() ") == _render(op.right).strip(
            "() "
        ):
            return True
    return False


# ---------------------------------------------------------------- neutral elements

# What a padded lane must hold for a max or min (or their arg forms) to ignore it.
_NEUTRAL = {
    "max": '-float("inf")',
    "argmax": '-float("inf")',
    "min": 'float("inf")',
    "argmin": 'float("inf")',
}
_INF = ('float("inf")', 'float("Inf")', "math.inf", "tl.inf", "inf")


def _is_inf(expr: cst.BaseExpression, negative: bool) -> bool:
    """Whether `expr` spells infinity of that sign, however written (`-float("inf")`, `float("-inf")`)."""
    code = _render(expr).replace(" ", "").replace("'", '"')
    if negative:
        return (code.startswith("-") and code[1:] in _INF) or code.lower() == 'float("-inf")'
    return code in _INF

_EXP = ("tl.exp", "tl.math.exp", "tl.exp2", "tl.math.exp2")
