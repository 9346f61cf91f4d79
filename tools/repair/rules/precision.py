"""Precision: accumulate, load and multiply in float32 where half precision loses digits."""

from __future__ import annotations

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
    _feeds,
    _names,
    _with_kwarg,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.compose import _edit
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- fp32_accumulator


@rule(
    "fp32_accumulator",
    title="accumulate in float32, not half precision",
    bug_class="accumulation_precision",
    symptoms=("grows_with_magnitude", "x100", "everywhere", "scattered"),
    per="module",
)
def fp32_accumulator(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    for call in _calls(tree.module, "tl.zeros", "tl.full"):
        dtype = _arg(call, "dtype", 1 if _dotted(call.func) == "tl.zeros" else 2)
        value = dtype.value if dtype is not None else None
        if isinstance(value, cst.Attribute) and value.attr.value in ("float16", "bfloat16"):
            new = tree.replace(value, value.with_changes(attr=cst.Name("float32")))
            desc = f"{_dotted(call.func)}: accumulator dtype {tree.code(value)} -> float32"
            yield Edit(new, tree.line(value), desc)


# ---------------------------------------------------------------- half_store


@rule(
    "half_store",
    title="a float32 result is stored without a cast to half precision",
    bug_class="accumulation_precision",
    symptoms=("grows_with_magnitude", "x100", "large_positive", "everywhere", "scattered"),
)
def half_store(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`acc.to(tl.float16)` on a value the kernel stores, where the reference's output is float32 (a
    half-precision tutorial kernel applied to a float32 problem): the cast becomes `tl.float32`."""
    if context is not None and context.output_dtype not in ("", "float32"):
        return
    stored: set[str] = set()
    for store in _calls(fn.body, "tl.store"):
        value = _arg(store, "value", 1)
        stored |= _names(value.value) if value is not None else set()
    for cast in findall(fn.body, m.Call(func=m.Attribute(attr=m.Name("to")))):
        assert isinstance(cast, cst.Call)
        dtype = cast.args[0].value if cast.args else None
        if not isinstance(dtype, cst.Attribute) or dtype.attr.value not in ("float16", "bfloat16"):
            continue
        inline = any(cast in findall(s, m.Call()) for s in _calls(fn.body, "tl.store"))
        if not inline and not _feeds(cast, fn, tree) & stored:
            continue
        new = tree.replace(dtype, dtype.with_changes(attr=cst.Name("float32")))
        yield Edit(new, tree.line(cast), f"{fn.name.value}: store in float32, not {tree.code(dtype)}")


# ---------------------------------------------------------------- fp32_upcast_load


@rule(
    "fp32_upcast_load",
    title="upcast loads to float32 before reducing",
    bug_class="accumulation_precision",
    symptoms=("grows_with_magnitude", "x100", "scattered", "everywhere"),
)
def fp32_upcast_load(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Half-precision loads that feed a reduction or dot are upcast to float32 first."""
    reducers = _calls(fn.body, "tl.sum", "tl.dot", "tl.cumsum", "tl.max", "tl.min")
    reduced = set().union(*(_names(a.value) for c in reducers for a in c.args if a.keyword is None))
    accumulated = {
        n.target.value
        for n in findall(fn.body, m.AugAssign())
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
        yield Edit(new, tree.line(load, end=True), desc)


# ---------------------------------------------------------------- dot_ieee


@rule(
    "dot_ieee",
    title='tl.dot with input_precision="ieee" (no TF32)',
    bug_class="accumulation_precision",
    symptoms=("grows_with_magnitude", "scattered", "everywhere"),
    per="module",
)
def dot_ieee(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
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
        yield Edit(new, tree.line(call), "tl.dot in full float32 precision, not TF32")


# ---------------------------------------------------------------- drop_half_cast

_HALF = ("tl.float16", "tl.bfloat16")


@rule(
    "drop_half_cast",
    title="float32 values are not cast down to half precision to compute",
    bug_class="accumulation_precision",
    symptoms=("grows_with_magnitude", "scattered", "everywhere", "x100", "heavy_tailed"),
)
def drop_half_cast(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`a.to(tl.float16)` before `tl.dot` or arithmetic (a tensor-core habit) rounds float32 data to 11
    bits: an error of ~1e-3 everywhere. Where the reference returns float32 the casts go, all at once."""
    if context is not None and context.output_dtype not in ("", "float32", "float64"):
        return
    casts = [
        c
        for c in findall(fn.body, m.Call(func=m.Attribute(attr=m.Name("to"))))
        if isinstance(c, cst.Call) and c.args and _dotted(c.args[0].value) in _HALF
    ]
    if not casts:
        return
    new = _edit(tree, {c: (lambda node: node.func.value) for c in casts})  # type: ignore[attr-defined]
    what = f"{fn.name.value}: no cast to half precision ({len(casts)} dropped)"
    yield Edit(new, tree.line(casts[0]), what, tuple(tree.line(c) for c in casts[1:]))


_HOST_HALF = ("torch.float16", "torch.half", "torch.bfloat16")
_ALLOCATE = ("torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_like", "torch.zeros_like")


@rule(
    "half_buffer",
    title="a buffer the wrapper allocates in half precision for float32 data",
    bug_class="accumulation_precision",
    symptoms=("grows_with_magnitude", "scattered", "everywhere", "x100", "heavy_tailed"),
    per="module",
)
def half_buffer(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`torch.empty((M, R), dtype=torch.float16)` for an intermediate ("it is tiny, keep it in half") or an
    output of float32 inputs rounds every value it holds to 11 bits. Where the reference returns float32 the
    buffer is float32, or the dtype of the tensor whose device it takes."""
    if context is not None and context.output_dtype not in ("", "float32", "float64"):
        return
    for call in _calls(tree.module, *_ALLOCATE):
        dtype = _arg(call, "dtype", 99)
        if dtype is None or _dotted(dtype.value) not in _HOST_HALF:
            continue
        device = _arg(call, "device", 99)
        options = ["torch.float32"]
        where = device.value if device is not None else None
        if isinstance(where, cst.Attribute) and where.attr.value == "device":
            options.append(f"{tree.code(where.value)}.dtype")
        for option in options:
            yield tree.edit(dtype.value, _expr(option), f"buffer dtype {tree.code(dtype.value)} -> {option}")


RULES = rules_of(__name__)
