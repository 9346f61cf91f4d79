"""A function the reference applies that the kernel never does (part of the edit space).

A p-norm summing `x * x * x` instead of `|x|^3`, an L1 loss of signed differences, a fused ReLU forgotten
before the store: the reference names the function (`torch.abs`, `linalg.vector_norm`, `F.relu`), the kernel
calls no such thing. The edit wraps one value the kernel computes from its loads (or the value it stores) in
that function. Which functions a PyTorch call implies is a table of their definitions, not of cases.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _assignments,
    _calls,
    _dotted,
    _expr,
    _names,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# Triton forms of the functions, `{}` the value.
_FORMS = {
    "abs": "tl.abs({})",
    "relu": "tl.maximum({}, 0.0)",
    "sqrt": "tl.sqrt({})",
    "exp": "tl.exp({})",
    "sigmoid": "tl.sigmoid({})",
}
# PyTorch calls (last dotted name) and the functions their definitions apply to the values.
_IMPLIED = {
    "abs": ("abs",), "absolute": ("abs",), "l1_loss": ("abs",), "smooth_l1_loss": ("abs",),
    "huber_loss": ("abs",), "norm": ("abs", "sqrt"), "vector_norm": ("abs", "sqrt"), "matrix_norm": ("abs",),
    "pairwise_distance": ("abs",), "cdist": ("abs", "sqrt"), "pdist": ("abs",), "softsign": ("abs",),
    "hardshrink": ("abs",), "softshrink": ("abs",), "dist": ("abs",),
    "relu": ("relu",), "relu_": ("relu",), "ReLU": ("relu",), "clamp_min": ("relu",),
    "sqrt": ("sqrt",), "rsqrt": ("sqrt",), "std": ("sqrt",),
    "exp": ("exp",), "softmax": ("exp",), "log_softmax": ("exp",), "logsumexp": ("exp",),
    "sigmoid": ("sigmoid",), "Sigmoid": ("sigmoid",), "silu": ("sigmoid",),
}  # fmt: skip
# Triton names that already apply each function.
_APPLIED = {
    "abs": {"abs", "fabs"},
    "relu": {"maximum", "relu"},
    "sqrt": {"sqrt", "sqrt_rn", "rsqrt"},
    "exp": {"exp", "exp2"},
    "sigmoid": {"sigmoid"},
}


def implied_functions(reference_source: str) -> list[str]:
    """Functions the reference's calls apply, in the order it makes them."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            found += _IMPLIED.get(name, ())
    return list(dict.fromkeys(found))


def loaded_names(fn: cst.FunctionDef) -> set[str]:
    """Names whose value is computed from a `tl.load` (transitively): the kernel's data, not its indices."""
    out: set[str] = set()
    pairs = _assignments(fn.body)
    grew = True
    while grew:
        grew = False
        for targets, value in pairs:
            if targets <= out:
                continue
            if _calls(value, "tl.load") or (_names(value) & out):
                out |= targets
                grew = True
    return out


@rule("edit_missing_function", title="a function the reference applies and the kernel does not",
      bug_class="edit:function", guarded=True)  # fmt: skip
def edit_missing_function(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`x = tl.load(..)` -> `x = tl.abs(tl.load(..))`, `tl.store(p, v)` -> `tl.store(p, tl.maximum(v, 0.0))`:
    one value or one store at a time."""
    if context is None:
        return
    called = {
        (_dotted(c.func) or "").rpartition(".")[2]
        for c in findall(fn.body, m.Call())
        if isinstance(c, cst.Call)
    }
    missing = [f for f in implied_functions(context.reference_source) if not (_APPLIED[f] & called)]
    if not missing:
        return
    data = loaded_names(fn)
    for node in findall(fn.body, m.Assign() | m.AugAssign()):
        assert isinstance(node, cst.Assign | cst.AugAssign)
        targets = (
            set().union(*(_names(t.target) for t in node.targets))
            if isinstance(node, cst.Assign)
            else _names(node.target)
        )
        if not (targets & data) or m.matches(node.value, m.Call(func=m.Attribute(attr=m.Name("zeros")))):
            continue
        for f in missing:
            new = _expr(_FORMS[f].format(_render(node.value)))
            yield tree.edit(node.value, new, f"{fn.name.value}: {_FORMS[f].format(tree.code(node.value))}")
    for store in _calls(fn.body, "tl.store"):
        if len(store.args) < 2 or store.args[1].keyword is not None:
            continue
        value = store.args[1].value
        for f in missing:
            new = _expr(_FORMS[f].format(_render(value)))
            yield tree.edit(value, new, f"{fn.name.value}: store {_FORMS[f].format(tree.code(value))}")


RULES = rules_of(__name__)
