"""Spec checks: arguments the reference honours that the candidate ignores, as hypotheses and as edits.

The reference says what the operator is: `F.avg_pool2d(x, 3, ceil_mode=True, count_include_pad=False)`,
`torch.var(x, dim=1, correction=0)`, a loss with `reduction="sum"`, a BatchNorm that runs in training mode.
A candidate that never mentions such an argument (by name or by its non-default value) most likely ignores
it. Each gap is a hypothesis of its own; gaps on the arguments that decide a divisor (correction, unbiased,
ceil_mode, count_include_pad, divisor_override, reduction) also open divisor edits in the kernels and the
wrapper, which the search screens like every other edit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _expr,
    _kernels,
    _launches,
    _names,
    _params,
    _render,
    rule,
)
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.rules.host import _self_attributes, _stands_for

SPEC_ARGUMENTS = (
    "training", "ceil_mode", "count_include_pad", "divisor_override", "dim", "correction", "unbiased",
    "quantiles", "reduction", "eps", "momentum", "ignore_index", "label_smoothing", "margin",
    "negative_slope", "approximate", "p", "beta", "threshold", "alpha", "padding", "dilation", "stride",
    "output_padding", "groups", "align_corners", "mode", "interpolation", "descending", "exclusive",
)  # fmt: skip
"""Keyword arguments that change what an operator computes (a gap on any of them is a hypothesis)."""
_DIVISOR_ARGUMENTS = {
    "correction", "unbiased", "ceil_mode", "count_include_pad", "divisor_override", "reduction",
}  # fmt: skip
# What a row kernel does anyway: the last dimension is where it reduces without being told.
_IMPLICIT = {("dim", "-1"), ("dim", "(-1,)"), ("dim", "[-1]")}


@dataclass(frozen=True)
class SpecGap:
    argument: str
    value: str  # as the reference writes it
    call: str  # the reference call that passes it

    def to_hypothesis(self) -> dict[str, Any]:
        return {
            "bug_class": "spec_ignored_argument",
            "confidence": 0.5,
            "evidence": [f"the reference passes {self.argument}={self.value} to {self.call}; the candidate "
                         f"never reads {self.argument}"],
            "location": None,
            "rules": (["edit_spec_divisor"] if self.argument in _DIVISOR_ARGUMENTS else [])
            + ["edit_unread_attribute"],
        }  # fmt: skip


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def reference_scopes(module: ast.Module) -> list[ast.AST]:
    """The reference's Model class first, then the module functions it calls, directly or through each
    other: a TritonBench reference's Model only calls a function that holds the operator's own calls."""
    functions = {fn.name: fn for fn in module.body if isinstance(fn, ast.FunctionDef)}
    scopes: list[ast.AST] = [c for c in module.body if isinstance(c, ast.ClassDef) and c.name == "Model"]
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
                scopes.append(functions.pop(node.func.id))
    return scopes


def honoured_arguments(reference_source: str) -> list[tuple[str, str, str]]:
    """(argument, value, call) the reference's Model passes by keyword, plus `training` for modules whose
    behaviour depends on the mode (batch norm, dropout) since nn.Module starts in training mode."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return []
    found: list[tuple[str, str, str]] = []
    scopes = reference_scopes(tree)
    for scope in scopes:
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            name = _dotted(node.func)
            for kw in node.keywords:
                literal = scope is scopes[0] or not isinstance(kw.value, ast.Name)
                if kw.arg in SPEC_ARGUMENTS and literal:
                    found.append((kw.arg, ast.unparse(kw.value), name))
            short = name.rsplit(".", 1)[-1].lower()
            if "batchnorm" in short or short in ("batch_norm", "dropout", "instancenorm1d"):
                if not any(kw.arg == "training" for kw in node.keywords):
                    found.append(("training", "self.training", name))
    return list(dict.fromkeys(found))


def spec_gaps(
    reference_source: str, candidate_source: str, module: cst.Module | None = None
) -> list[SpecGap]:
    """The honoured arguments the candidate never mentions, by name or by the value the reference gives, or
    only keeps on `self` without ever reading (`module`: the candidate already parsed, if it is)."""
    gaps: dict[str, SpecGap] = {}
    unread: set[str] | None = None  # parsed only when a mention needs checking
    for argument, value, call in honoured_arguments(reference_source):
        read = argument in candidate_source
        if read:
            if unread is None:
                unread = _unread(module) if module is not None else unread_attributes(candidate_source)
            read = not {argument, f"_{argument}"} & unread
        if read or (argument, value) in _IMPLICIT or argument in gaps:
            continue
        literal = value.strip("'\"")
        # A name (the constructor's own argument, handed on) is no value the candidate could spell out.
        distinctive = len(literal) >= 3 and not literal.isidentifier() and literal != "self.training"
        if distinctive and literal in candidate_source:
            continue  # the value itself is there (`1e-5` written as a constant); `0` or `1` proves nothing
        gaps[argument] = SpecGap(argument, value, call)
    return list(gaps.values())


def spec_hypotheses(reference_source: str, candidate_source: str) -> list[dict[str, Any]]:
    return [gap.to_hypothesis() for gap in spec_gaps(reference_source, candidate_source)]


def _divisor_gap(context: RuleContext | None, tree: Tree) -> bool:
    if context is None or not context.reference_source:
        return False
    gaps = spec_gaps(context.reference_source, tree.source, tree.module)
    return any(g.argument in _DIVISOR_ARGUMENTS for g in gaps)


@rule("edit_spec_divisor", title="a divisor the reference's arguments decide", bug_class="edit:spec",
      per="module", guarded=True)  # fmt: skip
def edit_spec_divisor(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Where an ignored argument decides a divisor: `/ d` becomes `/ (d - 1)`, `/ (d + 1)` or goes; a
    host-side `.mean()` becomes `.sum()` and back."""
    if not _divisor_gap(context, tree):
        return
    for fn in _kernels(tree.module):
        for op in findall(fn.body, m.BinaryOperation(operator=m.Divide())):
            assert isinstance(op, cst.BinaryOperation)
            if not _names(op.right):
                continue
            d = _render(op.right)
            for new in (f"({d} - 1)", f"({d} + 1)"):
                yield tree.edit(op.right, _expr(new), f"{fn.name.value}: divide by {new}")
            yield tree.edit(op, op.left, f"{fn.name.value}: no division by {d}")
    for call in findall(tree.module, m.Call(func=m.Attribute(attr=m.Name("mean") | m.Name("sum")))):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
        other = "sum" if call.func.attr.value == "mean" else "mean"
        new = call.with_changes(func=call.func.with_changes(attr=cst.Name(other)))
        yield tree.edit(call, new, f".{call.func.attr.value}() -> .{other}()")


def _unread(module: cst.Module) -> set[str]:
    """Attributes `ModelNew.__init__` keeps on `self` that no code reads."""
    stored = {id(t.target) for t in findall(module, m.AssignTarget(target=m.Attribute(value=m.Name("self"))))}
    read = {
        a.attr.value
        for a in findall(module, m.Attribute(value=m.Name("self")))
        if isinstance(a, cst.Attribute) and id(a) not in stored
    }
    return _self_attributes(module) - read


def unread_attributes(source: str) -> set[str]:
    try:
        return _unread(cst.parse_module(source))
    except cst.ParserSyntaxError:
        return set()


def _names_for(name: str, attribute: str) -> bool:
    """Whether a value named `name` is what the setting `attribute` decides: the same or a short form
    (`pad` for `padding`), or all of one's words among the other's (`divisor` of `divisor_override`, `slope`
    of `negative_slope`)."""
    words, setting = set(name.lower().strip("_").split("_")), set(attribute.lower().strip("_").split("_"))
    small, large = sorted((words, setting), key=len)
    return _stands_for(name, attribute.lstrip("_")) or (all(len(w) >= 3 for w in small) and small <= large)


@rule("edit_unread_attribute", title="a setting the model keeps and never reads, used where it was meant",
      bug_class="edit:spec", per="module")  # fmt: skip
def edit_unread_attribute(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`__init__` keeps `self.divisor_override` and nothing reads it, while `forward` computes its own
    `divisor = float(k * k)`: the value named for the setting (an assignment, a keyword argument, a launch
    argument bound to a kernel parameter of that name) becomes the setting, or the setting where it is given
    (`self.x if self.x is not None else ...`)."""
    unread = _unread(tree.module)
    if not unread:
        return
    kernels = {k.name.value: [p.name.value for p in _params(k)] for k in _kernels(tree.module)}
    values: list[tuple[str, cst.BaseExpression, bool]] = []  # (name, value, assigned rather than passed)
    for cls in findall(tree.module, m.ClassDef(name=m.Name("ModelNew"))):
        assert isinstance(cls, cst.ClassDef)
        for method in cls.body.body:
            if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
                continue
            for node in findall(method.body, m.Assign(targets=[m.AssignTarget(target=m.Name())])):
                assert isinstance(node, cst.Assign) and isinstance(node.targets[0].target, cst.Name)
                values.append((node.targets[0].target.value, node.value, True))
            for call in findall(method.body, m.Call()):
                assert isinstance(call, cst.Call)
                values += [(a.keyword.value, a.value, False) for a in call.args if a.keyword is not None]
            for call in _launches(method):
                assert isinstance(call.func, cst.Subscript)
                params = kernels.get(_render(call.func.value), [])
                positional = [a for a in call.args if a.keyword is None and not a.star]
                values += [(p, a.value, False) for p, a in zip(params, positional, strict=False)]
    for name, value, assigned in values:
        code = _render(value)
        for attribute in sorted(unread):
            if not _names_for(name, attribute) or f"self.{attribute}" in code:
                continue
            setting = f"self.{attribute}"
            for new in (f"({setting} if {setting} is not None else {code})", setting):
                what = f"{name} = {new}" if assigned else f"argument {name}: {code} -> {new}"
                yield tree.edit(value, _expr(new), what)
