"""The reference's in-place contract: which inputs it leaves alone and which it updates.

Generated wrappers often get this wrong while computing the right values: a kernel that stores its result
over its input (`tl.store(x_ptr + offs, y)`, `out = x`) where the reference returns a new tensor, or a
function that returns a fresh tensor where the reference writes into a destination it is handed
(`index_select_cat_fwd(output, source, index)`). The judge reports either per input
(`input_modified:i`, `input_update_wrong:i`); the fix is host glue in `ModelNew.forward`, never compute:
hand the kernel a copy of the input, or copy the result into the input the reference updates.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _after_docstring,
    _names,
    _params,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall


def _input_params(fn: cst.FunctionDef, effect: str, context: RuleContext | None) -> list[str]:
    """Names of forward's parameters at the input positions the judge reported with `effect`."""
    if context is None:
        return []
    # Positional inputs map onto forward's parameters after `self`, in order (a `*args` forward has none).
    params = [p.name.value for p in _params(fn) if p.name.value != "self"]
    return [params[i] for i in context.inputs_with(effect) if i < len(params)]


@rule(
    "clone_modified_input",
    title="hand the kernel a copy of an input the reference leaves unchanged",
    bug_class="wrapper",
    symptoms=("input_modified",),
    per="forward",
)
def clone_modified_input(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """The candidate overwrites an input the reference only reads: forward starts from a copy of it."""
    body = fn.body
    if not isinstance(body, cst.IndentedBlock):
        return
    at = _after_docstring(body)
    line = tree.line(body.body[at]) if at < len(body.body) else tree.line(fn)
    for name in _input_params(fn, "input_modified", context):
        new_body = body.with_changes(
            body=[*body.body[:at], cst.parse_statement(f"{name} = {name}.clone()\n"), *body.body[at:]]
        )
        yield Edit(tree.spliced(body, new_body), line, f"ModelNew.forward: work on a copy of {name}")


@rule(
    "write_back_update",
    title="copy the result into the input the reference updates in place",
    bug_class="wrapper",
    symptoms=("input_update_wrong",),
    per="forward",
)
def write_back_update(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """The reference writes its result into an input it is handed; the candidate returns a new tensor."""
    returns = [
        r
        for r in findall(fn.body, m.Return())
        if isinstance(r, cst.Return) and r.value is not None and not isinstance(r.value, cst.Tuple)
    ]
    if len(returns) != 1:
        return  # several exits (or a tuple result): which one feeds which input is not ours to guess
    ret = returns[0]
    line_stmt = tree.parent(ret)
    block = tree.parent(line_stmt) if line_stmt is not None else None
    if not isinstance(line_stmt, cst.SimpleStatementLine) or not isinstance(block, cst.IndentedBlock):
        return
    assert ret.value is not None
    value = tree.code(ret.value)
    result = next((n for n in ("result", "updated", "kmedic_result") if n not in _names(fn)), None)
    if result is None:
        return
    at = next(i for i, s in enumerate(block.body) if s is line_stmt)
    for name in _input_params(fn, "input_update_wrong", context):
        if value.strip() == name:
            continue  # it already returns that input: its values are wrong, not the contract
        stmts = [
            cst.parse_statement(f"{result} = {value}\n"),
            cst.parse_statement(f"{name}.copy_({result})\n"),
            cst.parse_statement(f"return {result}\n"),
        ]
        new_block = block.with_changes(body=[*block.body[:at], *stmts, *block.body[at + 1 :]])
        what = f"ModelNew.forward: copy the result into {name}, which the reference updates in place"
        yield Edit(tree.spliced(block, new_block), tree.line(ret), what)


RULES = rules_of(__name__)
