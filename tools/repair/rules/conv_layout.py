"""Conv/pool kernels' bias, batch index and input strides."""

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
    _assignments,
    _calls,
    _expr,
    _is_number,
    _launches,
    _names,
    _params,
    _program_id_names,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.conv_spec import (
    _apply,
    _atom,
    _functions,
    _launch_args,
    _statement,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- bias_never_added


def _bias_params(module: cst.Module, fn: cst.FunctionDef) -> list[str]:
    launched = _launch_args(module, fn)
    out = []
    for p in _params(fn):
        name = p.name.value
        if "bias" in name.lower() or "bias" in launched.get(name, "").lower():
            out.append(name)
    return out


_CHANNEL = re.compile(
    r"^(o|out_?)?c(h|hannel)?(_?out|o)?(_?(idx|id|offs?|index))?$|^(oc|co|cout|c_out|offs_n|rn|cols?)\w*$"
)


@rule(
    "bias_never_added",
    title="add the bias the kernel receives but never reads",
    bug_class="operator_misread",
    symptoms=("everywhere", "constant_offset", "columns", "rows", "periodic"),
    guarded=True,
)
def bias_never_added(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A bias the kernel receives but never reads is added to the result before the store."""
    used = set().union(*(_names(s) for s in fn.body.body))
    unread = [b for b in _bias_params(tree.module, fn) if b not in used]
    stores = _calls(fn.body, "tl.store")
    if not unread or not stores:
        return
    store = stores[-1]
    value = _arg(store, "value", 1)
    if value is None:
        return
    values = _assignments(fn.body)
    names = [t for targets, _ in values for t in sorted(targets)]
    channels = [n for n in dict.fromkeys(names) if _CHANNEL.match(n.lower()) and "mask" not in n.lower()]
    tensors = {t for targets, v in values if _calls(v, "tl.arange") for t in targets}
    masks: dict[str, str] = {}
    for targets, v in values:
        for cmp in findall(v, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            if isinstance(cmp.left, cst.Name) and len(targets) == 1:
                masks.setdefault(cmp.left.value, next(iter(targets)))
    slices: dict[str, list[str]] = {}
    for sub in findall(fn.body, m.Subscript(value=m.Name())):
        assert isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name)
        text = _render(sub)[len(sub.value.value) :]
        if "None" in text:
            slices.setdefault(sub.value.value, [])
            if text not in slices[sub.value.value]:
                slices[sub.value.value].append(text)
    stmt = _statement(tree, store)
    if stmt is None:
        return
    for bias in unread:
        for channel in channels:
            load = f"tl.load({bias} + {channel}"
            load += f", mask={masks[channel]}, other=0.0)" if channel in masks else ")"
            shapes = slices.get(channel, []) + [""] if channel in tensors else [""]
            for shape in shapes:
                term = f"{load}{shape}"
                if isinstance(value.value, cst.Name):
                    name = value.value.value
                    new = _insert_before(tree, stmt, f"{name} += {term}")
                else:
                    new = _apply(
                        tree, replace={value.value: _expr(f"{_atom(_render(value.value))} + {term}")}
                    )
                what = f"{fn.name.value}: add {term} before the store"
                yield Edit(new, tree.line(stmt), what)


def _insert_before(tree: Tree, stmt: cst.CSTNode, code: str) -> cst.Module:
    block = tree.parent(stmt)
    assert isinstance(block, cst.IndentedBlock)
    at = next(i for i, s in enumerate(block.body) if s is stmt)
    body = [*block.body[:at], cst.parse_statement(code + "\n"), *block.body[at:]]
    return tree.replace(block, block.with_changes(body=body))


# ---------------------------------------------------------------- store_batch_index


@rule(
    "store_batch_index",
    title="output offset indexes the batch (combined batch*channel program id)",
    bug_class="strides_layout",
    symptoms=("untouched_region", "zero_region", "garbage_region", "rows", "leading", "trailing"),
    guarded=True,
)
def store_batch_index(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """The output offset uses the combined (batch, channel) id, not the channel alone."""
    pids = _program_id_names(fn)
    splits: dict[str, tuple[str, str, str]] = {}  # channel -> (combined id, batch, divisor)
    quotients: dict[tuple[str, str], str] = {}
    remainders: dict[tuple[str, str], str] = {}
    for targets, value in _assignments(fn.body):
        if len(targets) != 1 or not isinstance(value, cst.BinaryOperation):
            continue
        if not (isinstance(value.left, cst.Name) and value.left.value in pids):
            continue
        key = (value.left.value, _render(value.right))
        if isinstance(value.operator, cst.FloorDivide):
            quotients[key] = next(iter(targets))
        elif isinstance(value.operator, cst.Modulo):
            remainders[key] = next(iter(targets))
    for key, channel in remainders.items():
        if key in quotients:
            splits[channel] = (key[0], quotients[key], key[1])
    for store in _calls(fn.body, "tl.store"):
        address = _arg(store, "pointer", 0)
        if address is None:
            continue
        read = _names(address.value)
        for channel, (combined, batch, divisor) in splits.items():
            if channel not in read or batch in read or combined in read:
                continue
            sites = [n for n in findall(address.value, m.Name(channel)) if isinstance(n, cst.Name)]
            for replacement in (combined, f"({batch} * {_atom(divisor)} + {channel})"):
                new = _apply(tree, {n: _expr(replacement) for n in sites})
                what = f"{fn.name.value}: the store offset indexes the batch ({channel} -> {replacement})"
                yield Edit(new, tree.line(store), what)


# ---------------------------------------------------------------- launch_strides_from_shape


def _product(expr: cst.BaseExpression) -> list[str] | None:
    """Factor names of a product of names (`C * H * W` -> [C, H, W]); None if not one."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply) and not expr.lpar:
        left, right = _product(expr.left), _product(expr.right)
        return left + right if left is not None and right is not None else None
    return None


def _shape_owners(fn: cst.FunctionDef) -> dict[str, tuple[str, int, int]]:
    """Size name -> (tensor, axis, ndim) from `N, C, H, W = x.shape` and `H = x.shape[2]`."""
    out: dict[str, tuple[str, int, int]] = {}
    for stmt in findall(fn.body, m.Assign()):
        assert isinstance(stmt, cst.Assign)
        value = stmt.value
        if len(stmt.targets) != 1:
            continue
        target = stmt.targets[0].target
        call = value.func if isinstance(value, cst.Call) else None
        if (
            isinstance(value, cst.Attribute)
            and value.attr.value == "shape"
            and isinstance(value.value, cst.Name)
        ):
            tensor = value.value.value
        elif (
            isinstance(call, cst.Attribute) and call.attr.value == "size" and isinstance(call.value, cst.Name)
        ):
            tensor = call.value.value
        else:
            continue
        if isinstance(target, cst.Tuple):
            elements = target.elements
            for axis, el in enumerate(elements):
                if isinstance(el.value, cst.Name) and el.value.value != "_":
                    out.setdefault(el.value.value, (tensor, axis, len(elements)))
    return out


@rule(
    "launch_strides_from_shape",
    title="launch passes the input's strides, not ones derived from its shape",
    bug_class="strides_layout",
    symptoms=("noncontig", "transposed", "rows_permuted", "shifted", "periodic", "scattered"),
    per="module",
    guarded=True,
)
def launch_strides_from_shape(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Strides passed as products of the shape (`C*H*W, H*W, W, 1`) assume a contiguous input."""
    for fn in _functions(tree.module):
        owners = _shape_owners(fn)
        for call in _launches(fn):
            args = list(call.args)
            end = 0
            while end < len(args):
                if not (args[end].keyword is None and _is_number(args[end].value, 1)):
                    end += 1
                    continue
                start, suffix = end, []
                while start > 0 and args[start - 1].keyword is None:
                    factors = _product(args[start - 1].value)
                    if factors is None or len(factors) != len(suffix) + 1:
                        break
                    if any(factors.count(x) < suffix.count(x) for x in suffix):
                        break
                    suffix = factors
                    start -= 1
                run = end - start + 1
                tensors = {owners[n][0] for n in suffix if n in owners}
                if run >= 2 and len(tensors) == 1:
                    tensor = next(iter(tensors))
                    ndim = owners[suffix[0]][2]
                    first = ndim - run
                    mapping: dict[cst.CSTNode, cst.CSTNode] = {
                        args[start + i].value: _expr(f"{tensor}.stride({first + i})") for i in range(run)
                    }
                    what = f"{fn.name.value}: pass {tensor}'s strides, not the contiguous ones"
                    yield Edit(_apply(tree, mapping), tree.line(args[start]), what)
                end += 1


RULES = rules_of(__name__)
