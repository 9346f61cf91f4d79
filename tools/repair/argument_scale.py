"""A function's argument missing its parameter's scale (part of the edit space).

CELU is `alpha * (exp(x / alpha) - 1)`, softplus with `beta` is `log(1 + exp(beta * x)) / beta`, a softmax
with a temperature takes `exp(x / T)`: the parameter scales the argument of the transcendental as well as
its result, and a kernel that writes `exp(x)` keeps the outer factor and forgets the inner one. The edit
divides or multiplies the argument of a math function by a scalar parameter of the function it is in.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _constexpr_params,
    _dotted,
    _expr,
    _names,
    _operand,
    _params,
    _pointer_bases,
    _program_id_names,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall
from kernel_medic.tools.repair.variables import _mask_names, _name_kind

# Functions whose argument a parameter scales in the definitions of activations, losses and softmaxes.
_SCALED = {"exp", "exp2", "log", "log2", "log1p", "expm1", "sigmoid", "tanh", "erf", "softplus"}


def _scalar_params(fn: cst.FunctionDef) -> list[str]:
    """Parameters that hold a number to scale by: not a pointer, stride, size, block, mask or program id."""
    pids = _program_id_names(fn)
    masks = _mask_names(fn)
    # A constexpr may be a scale too (`ALPHA: tl.constexpr`): only block sizes are left out.
    blocks = {p for p in _constexpr_params(fn) if "block" in p.lower()}
    pointers = _pointer_bases(fn)
    out = []
    for p in _params(fn):
        name = p.name.value
        kind = _name_kind(name, pids, masks, blocks)
        if name not in pointers and (kind is None or kind.startswith("stem:")):
            out.append(name)
    return out


@rule(
    "edit_argument_scale",
    title="a math function's argument scaled by a parameter",
    bug_class="edit:operator",
    guarded=True,
)
def edit_argument_scale(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`tl.exp(x)` -> `tl.exp(x / alpha)` / `tl.exp(x * alpha)`, for each scalar parameter `alpha` of the
    function the call is in that its argument does not read already."""
    scalars = _scalar_params(fn)
    if not scalars:
        return
    for call in findall(fn.body, m.Call()):
        assert isinstance(call, cst.Call)
        if len(call.args) != 1 or (_dotted(call.func) or "").split(".")[-1] not in _SCALED:
            continue
        arg = call.args[0].value
        operand = _operand(arg)
        for p in scalars:
            if p in _names(arg):
                continue
            for op in ("/", "*"):
                new = call.with_changes(args=[call.args[0].with_changes(value=_expr(f"{operand} {op} {p}"))])
                yield tree.edit(call, new, f"{fn.name.value}: {tree.code(call)} -> {_render(new)}")


RULES = rules_of(__name__)
