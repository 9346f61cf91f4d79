"""Crash rules for kernel bodies written as if Triton were NumPy, CUDA C or an older Triton.

Each acts only on a reported crash (`RuleContext.crash`) and rewrites a construct Triton has never had into
the one it has, without guessing at semantics:

- `pointer_subscript`: a pointer indexed like an array (`x_ptr[offs]`, `out_ptr[i] = v`,
  `x_ptr[offs][mask]`) -> `tl.load(x_ptr + offs, mask=...)` / `tl.store(...)`;
- `arange_start`: `tl.arange(N)` (NumPy's one-argument form) -> `tl.arange(0, N)`;
- `tensor_method_drift`: NumPy/torch tensor methods on Triton values (`x.astype(t)`, `x.float()`) ->
  `x.to(...)`;
- `unknown_keyword`: a keyword argument the called function does not take (`tl.load(..., num_elements=B)`)
  is dropped where the crash names it;
- `dot_operand_dtype`: `tl.dot` of an fp32 tile and an fp16 one -> one operand cast to the other's dtype;
- `pointer_offsets`: a load or store through a bare pointer with a block mask -> the mask's block index
  added to the pointer;
- `power_operator`: `x ** 2` and other powers -> products, `tl.sqrt`, `tl.rsqrt` or libdevice `pow`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _arg,
    _assignments,
    _calls,
    _constexpr_params,
    _dotted,
    _expr,
    _kernels,
    _mask_names,
    _names,
    _operand,
    _params,
    _render,
    _replace_many,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.crash_api import _Swap
from kernel_medic.tools.repair.rules.cst_find import findall


def _crash(context: RuleContext | None) -> dict[str, Any]:
    return context.crash if context is not None else {}


# ---------------------------------------------------------------- pointers indexed like arrays


def _pointer_params(fn: cst.FunctionDef) -> set[str]:
    """Names that can only be pointers here: parameters that are not constexpr, not scalar-annotated and
    never rebound, and locals only ever assigned such a pointer plus an offset (`row_ptr = x_ptr + off`)."""
    assigned: dict[str, list[cst.BaseExpression | None]] = {}
    for node in findall(fn.body, m.Assign() | m.AugAssign() | m.AnnAssign()):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    assigned.setdefault(t.target.value, []).append(node.value)
        elif isinstance(node, cst.AugAssign | cst.AnnAssign) and isinstance(node.target, cst.Name):
            # `p += step` keeps a pointer a pointer; an annotated local is whatever its annotation says
            keeps = isinstance(node, cst.AugAssign) and isinstance(
                node.operator, cst.AddAssign | cst.SubtractAssign
            )
            assigned.setdefault(node.target.value, []).append(None if not keeps else _expr(node.target.value))
    out = set()
    for p in _params(fn):
        annotation = _dotted(p.annotation.annotation) if p.annotation else None
        if annotation in ("int", "float", "bool", "str") or p.name.value in _constexpr_params(fn):
            continue
        if p.name.value not in assigned:
            out.add(p.name.value)
    grew = True
    while grew:
        grew = False
        for name, values in assigned.items():
            if name in out or not values:
                continue
            if all(v is not None and _offset_of(v, out | {name}) for v in values):
                out.add(name)
                grew = True
    return out


def _offset_of(value: cst.BaseExpression, pointers: set[str]) -> bool:
    """`p + e` / `e + p` / `p - e` with `p` a pointer (the pointer itself counts too)."""
    if isinstance(value, cst.Name):
        return value.value in pointers
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add | cst.Subtract):
        left = isinstance(value.left, cst.Name | cst.BinaryOperation) and _offset_of(value.left, pointers)
        right = (
            isinstance(value.operator, cst.Add)
            and isinstance(value.right, cst.Name)
            and value.right.value in pointers
        )
        return left or right
    return False


def _single_index(sub: cst.Subscript) -> cst.BaseExpression | None:
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    return sub.slice[0].slice.value


def _access(sub: cst.Subscript, pointers: set[str]) -> tuple[str, str, str | None] | None:
    """(pointer, index, mask) of `p[idx]` or `p[idx][mask]` on a pointer parameter, else None."""
    outer = _single_index(sub)
    if outer is None:
        return None
    if isinstance(sub.value, cst.Name) and sub.value.value in pointers:
        if not _pointer_like(sub.value.value, outer):
            return None
        return sub.value.value, _render(outer), None
    if isinstance(sub.value, cst.Subscript):
        inner = _single_index(sub.value)
        base = sub.value.value
        if inner is not None and isinstance(base, cst.Name) and base.value in pointers:
            return base.value, _render(inner), _render(outer)
    return None


def _pointer_like(name: str, index: cst.BaseExpression) -> bool:
    """`shape[0]`, `strides[1]`: a tuple argument (Triton takes tuples), not a pointer. A constant index of
    a parameter that does not say it is a pointer is read as a tuple too."""
    lowered = name.lower()
    if any(word in lowered for word in ("shape", "stride", "size", "dims")):
        return False
    return not isinstance(index, cst.Integer) or "ptr" in lowered or "pointer" in lowered


def _address(pointer: str, index: str) -> str:
    return f"{pointer} + ({index})" if any(op in index for op in "+-<>&|^") else f"{pointer} + {index}"


def _mask_for(fn: cst.FunctionDef, index: str) -> str | None:
    """The kernel's mask over the names `index` uses (`mask = offs < n` for `x_ptr[offs]`), if exactly one."""
    used = _names(_expr(index))
    values = {t: v for targets, v in _assignments(fn.body) for t in targets}
    found = [
        name
        for name in _mask_names(fn)
        if name in values
        and isinstance(values[name], cst.Comparison | cst.BinaryOperation)
        and _names(values[name]) & used
    ]
    return found[0] if len(found) == 1 else None


@rule(
    "pointer_subscript",
    title="a pointer indexed like an array instead of tl.load / tl.store",
    bug_class="type_mismatch",
    symptoms=("type_mismatch", "wrapper_launch_error", "compile_error", "runtime_error"),
    per="module",
)
def pointer_subscript(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`v = p[idx]` -> `tl.load(p + idx)`, `p[idx] = v` -> `tl.store(p + idx, v)` (`p[idx] += v` loads
    first), `p[idx][mask]` -> with `mask=mask`. A single index only: `p[i, j]` needs strides nobody gave.

    In every kernel at once (generated files repeat the mistake), then kernel by kernel; each with the
    kernel's one mask over the index's names where it has one, and without."""
    if not _crash(context):
        return
    offered: set[str] = set()
    for with_masks in (True, False):
        per_kernel = [(fn, *_accesses_as_calls(fn, with_masks)) for fn in _kernels(tree.module)]
        per_kernel = [(fn, mapping, masked) for fn, mapping, masked in per_kernel if mapping]
        options = []
        if len(per_kernel) > 1:
            everything = {k: v for _, mapping, _ in per_kernel for k, v in mapping.items()}
            masked = any(masked for _, _, masked in per_kernel)
            options.append((everything, "every kernel", masked))
        options += [(mapping, fn.name.value, masked) for fn, mapping, masked in per_kernel]
        for mapping, where, masked in options:
            module = _replace_many(tree.module, mapping)
            if module.code in offered:
                continue
            offered.add(module.code)
            first = min(tree.line(n) for n in mapping)
            label = " (with the kernel's mask)" if masked else ""
            yield Edit(module, first, f"{where}: pointer indexing as tl.load/tl.store{label}")


def _accesses_as_calls(fn: cst.FunctionDef, with_masks: bool) -> tuple[dict[cst.CSTNode, cst.CSTNode], bool]:
    """The kernel's indexed reads and writes of pointers as tl.load / tl.store, and whether a mask was
    inferred for any."""
    pointers = _pointer_params(fn)
    stores: dict[cst.CSTNode, tuple[str, str, str | None]] = {}
    loads: dict[cst.CSTNode, tuple[str, str, str | None]] = {}
    if not pointers:
        return {}, False
    for node in findall(fn.body, m.Assign() | m.AugAssign()):
        if isinstance(node, cst.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Subscript):
                continue
            access = _access(node.targets[0].target, pointers)
            if access is not None:
                stores[node] = access
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Subscript):
            access = _access(node.target, pointers)
            if access is not None:
                stores[node] = access
    for sub in findall(fn.body, m.Subscript()):
        assert isinstance(sub, cst.Subscript)
        if any(_inner_of(sub, t) for t in stores):
            continue
        access = _access(sub, pointers)
        if access is not None:
            loads[sub] = access
    # `p[idx][mask]` also matches its inner `p[idx]`: keep the outer one only.
    loads = {k: v for k, v in loads.items() if not any(k is not o and _contains(o, k) for o in loads)}
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    inferred = False
    for node, (pointer, index, mask) in loads.items():
        found = _mask_for(fn, index) if with_masks and mask is None else None
        inferred = inferred or found is not None
        mapping[node] = _expr(f"tl.load({_address(pointer, index)}{_kw(mask or found)})")
    for node, (pointer, index, mask) in stores.items():
        assert isinstance(node, cst.Assign | cst.AugAssign)
        found = _mask_for(fn, index) if with_masks and mask is None else None
        inferred = inferred or found is not None
        mask = mask or found
        # the stored value with its own indexed loads rewritten too
        value = _render(node.value.visit(_Swap(mapping)))
        if isinstance(node, cst.AugAssign):
            op = _render(node.operator).strip().removesuffix("=")
            value = f"tl.load({_address(pointer, index)}{_kw(mask)}) {op} ({value})"
        mapping[node] = cst.Expr(_expr(f"tl.store({_address(pointer, index)}, {value}{_kw(mask)})"))
    return mapping, inferred


def _kw(mask: str | None) -> str:
    return f", mask={mask}" if mask else ""


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    return any(n is inner for n in findall(outer, m.Subscript()))


def _inner_of(sub: cst.Subscript, stmt: cst.CSTNode) -> bool:
    """Whether `sub` is (part of) the target of a store statement."""
    target = stmt.targets[0].target if isinstance(stmt, cst.Assign) else getattr(stmt, "target", None)
    return target is not None and (target is sub or _contains(target, sub))


# ---------------------------------------------------------------- tl.arange(N)


@rule(
    "arange_start",
    title="tl.arange called with one argument (NumPy's form)",
    bug_class="api_drift",
    symptoms=("api_drift", "constexpr_or_power_of_2", "compile_error", "runtime_error"),
    per="module",
)
def arange_start(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`tl.arange(N)` -> `tl.arange(0, N)`: Triton's arange takes a start and an end, both required."""
    if not _crash(context):
        return
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for call in findall(tree.module, m.Call()):
        assert isinstance(call, cst.Call)
        if _dotted(call.func) in ("tl.arange", "triton.arange") and len(call.args) == 1:
            if call.args[0].keyword is None and not call.args[0].star:
                mapping[call] = call.with_changes(
                    func=_expr("tl.arange"),
                    args=[cst.Arg(_expr("0")), call.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)],
                )
    if mapping:
        first = min(tree.line(n) for n in mapping)
        yield Edit(_replace_many(tree.module, mapping), first, "tl.arange(N) as tl.arange(0, N)")


# ---------------------------------------------------------------- NumPy / torch methods on Triton values

# NumPy / torch tensor methods whose Triton spelling is a function of the tensor (same arguments after it).
_AS_FUNCTIONS = {
    "clip": "tl.clamp",
    "clamp": "tl.clamp",
    "exp": "tl.exp",
    "log": "tl.log",
    "sqrt": "tl.sqrt",
    "abs": "tl.abs",
    "sigmoid": "tl.sigmoid",
    "maximum": "tl.maximum",
    "minimum": "tl.minimum",
}
_METHODS = {"astype": None, "type": None, "float": "tl.float32", "half": "tl.float16", "double": "tl.float64"}


@rule(
    "tensor_method_drift",
    title="a NumPy or torch tensor method called on a Triton value",
    bug_class="api_drift",
    symptoms=("api_drift", "type_mismatch", "compile_error", "runtime_error"),
    per="kernel",
)
def tensor_method_drift(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`x.astype(tl.float32)` / `x.type(tl.float32)` -> `x.to(tl.float32)`; `x.float()` / `x.half()` /
    `x.double()` -> `x.to(tl.float32 | tl.float16 | tl.float64)` (Triton tensors have only `.to`); the method
    the error names that Triton has as a function (`x.clip(a, b)`, `x.exp()`) -> `tl.clamp(x, a, b)`."""
    message = str(_crash(context).get("message", ""))
    if "attribute" not in message:
        return
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for call in findall(fn.body, m.Call(func=m.Attribute())):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
        name = call.func.attr.value
        named = f"attribute '{name}'" in message
        if name in _AS_FUNCTIONS and named and not any(a.keyword for a in call.args):
            # `offsets.clip(0, n - 1)` -> `tl.clamp(offsets, 0, n - 1)`: the method is a tl function
            args = ", ".join(_render(a.value) for a in call.args)
            receiver = _render(call.func.value)
            mapping[call] = _expr(f"{_AS_FUNCTIONS[name]}({receiver}{', ' + args if args else ''})")
            continue
        if name not in _METHODS or _dotted(call.func.value) in ("tl", "triton", "torch", "math"):
            continue
        dtype = _METHODS[name]
        if dtype is None and len(call.args) == 1 and call.args[0].keyword is None:
            mapping[call] = call.with_changes(func=call.func.with_changes(attr=cst.Name("to")))
        elif dtype is not None and not call.args:
            mapping[call] = call.with_changes(
                func=call.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(_expr(dtype))]
            )
    if mapping:
        first = min(tree.line(n) for n in mapping)
        what = f"{fn.name.value}: tensor methods as Triton spells them (.to, tl.clamp, ...)"
        yield Edit(_replace_many(tree.module, mapping), first, what)


# ---------------------------------------------------------------- a keyword the function does not take

_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


@rule(
    "unknown_keyword",
    title="a call passes a keyword argument the function does not take",
    bug_class="api_drift",
    symptoms=("api_drift", "wrapper_launch_error", "compile_error", "runtime_error"),
    per="module",
)
def unknown_keyword(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`tl.load(p, num_elements=B)` (TypeError: ... unexpected keyword argument 'num_elements') -> without
    it: on the failing line when the crash names one, else every `tl.` call passing it."""
    crash = _crash(context)
    found = _UNEXPECTED.search(str(crash.get("message", "")))
    if not found:
        return
    keyword = found.group(1)
    calls = [c for c in findall(tree.module, m.Call()) if isinstance(c, cst.Call)]
    passing = [c for c in calls if any(a.keyword is not None and a.keyword.value == keyword for a in c.args)]
    on_line = [c for c in passing if tree.line(c) <= int(crash.get("line") or 0) <= tree.line(c, end=True)]
    chosen = on_line or [c for c in passing if (_dotted(c.func) or "").startswith("tl.")]
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for call in chosen:
        if any(call is not o and any(n is call for n in findall(o, m.Call())) for o in chosen):
            continue  # an inner call: its outer one is rewritten whole
        kept = [a for a in call.args if not (a.keyword is not None and a.keyword.value == keyword)]
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        mapping[call] = call.with_changes(args=kept)
    if mapping:
        first = min(tree.line(n) for n in mapping)
        yield Edit(
            _replace_many(tree.module, mapping), first, f"calls without the unknown keyword {keyword}="
        )


# ---------------------------------------------------------------- tl.dot operands of different dtypes

_DOT_DTYPES = re.compile(r"must be same dtype\. Got (\w+) and (\w+)")
_TL_DTYPE = {"fp16": "tl.float16", "bf16": "tl.bfloat16", "fp32": "tl.float32", "fp64": "tl.float64",
             "fp8e4nv": "tl.float8e4nv", "fp8e5": "tl.float8e5", "i8": "tl.int8"}  # fmt: skip


@rule(
    "dot_operand_dtype",
    title="tl.dot on operands of different dtypes (an fp32 accumulator times an fp16 tile)",
    bug_class="type_mismatch",
    symptoms=("type_mismatch", "compile_error", "runtime_error"),
    per="kernel",
)
def dot_operand_dtype(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`tl.dot(p, v)` with p fp32 and v fp16 (Triton: "Both operands must be same dtype. Got fp32 and fp16")
    -> `tl.dot(p.to(tl.float16), v)`, or the other operand cast up: at the failing line when the crash names
    one, else at every `tl.dot` of the kernel. Which cast the tolerance accepts, the judge decides."""
    crash = _crash(context)
    found = _DOT_DTYPES.search(str(crash.get("message", "")))
    if not found or found.group(1) not in _TL_DTYPE or found.group(2) not in _TL_DTYPE:
        return
    lhs, rhs = _TL_DTYPE[found.group(1)], _TL_DTYPE[found.group(2)]
    dots = _calls(fn.body, "tl.dot")
    line = int(crash.get("line") or 0)
    dots = [c for c in dots if tree.line(c) <= line <= tree.line(c, end=True)] or dots
    for call in dots:
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) < 2:
            continue
        a, b = positional[0], positional[1]
        for arg, dtype in ((a, rhs), (b, lhs)):
            cast = arg.with_changes(value=_expr(f"{_operand(arg.value)}.to({dtype})"))
            what = f"tl.dot operand {_render(arg.value)} cast to {dtype}"
            yield tree.edit(arg, cast, what)


# ---------------------------------------------------------------- a bare pointer with a block mask

_BARE_POINTER = re.compile(r"(?:Mask|Value|Other) argument cannot be block type if pointer argument is not")


def _block_indices(fn: cst.FunctionDef, mask: cst.BaseExpression) -> list[str]:
    """What in a mask indexes a block: `tl.arange(...)` calls in it, and names in it assigned (directly or
    through other names) from a `tl.arange`, in order of appearance."""
    assignments = _assignments(fn.body)
    reads: dict[str, set[str]] = {}
    for targets, value in assignments:
        for t in targets:
            arange = {"tl.arange"} if _calls(value, "tl.arange") else set()
            reads.setdefault(t, set()).update(_names(value) | arange)

    def from_arange(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in seen or name not in reads:
            return False
        return "tl.arange" in reads[name] or any(from_arange(n, seen | {name}) for n in reads[name])

    # A mask given by name (`mask = offs < N`) is read through its assignments, one level deep.
    values = {t: v for targets, v in assignments for t in targets}
    exprs = [mask, *(values[n] for n in sorted(_names(mask)) if n in values and "mask" in n.lower())]
    out = [_render(c) for e in exprs for c in _calls(e, "tl.arange")]
    out += [n for e in exprs for n in sorted(_names(e)) if from_arange(n) and "mask" not in n.lower()]
    return list(dict.fromkeys(out))


@rule(
    "pointer_offsets",
    title="a load or store through a bare pointer with a block mask or value (the offsets left out)",
    bug_class="type_mismatch",
    symptoms=("type_mismatch", "compile_error", "runtime_error"),
    per="kernel",
)
def pointer_offsets(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`tl.load(x_row_ptr, mask=cols < N)` -> `tl.load(x_row_ptr + cols, mask=cols < N)`: the block index the
    mask is built from is added to the pointer, at the failing line (one edit per candidate index)."""
    crash = _crash(context)
    if not _BARE_POINTER.search(str(crash.get("message", ""))):
        return
    line = int(crash.get("line") or 0)
    for call in _calls(fn.body, "tl.load", "tl.store"):
        if not tree.line(call) <= line <= tree.line(call, end=True):
            continue
        pointer = _arg(call, "pointer", 0)
        mask = _arg(call, "mask", 1 if _dotted(call.func) == "tl.load" else 2)
        if pointer is None or mask is None:
            continue
        for index in _block_indices(fn, mask.value):
            moved = pointer.with_changes(value=_expr(f"{_render(pointer.value)} + {index}"))
            yield tree.edit(pointer, moved, f"{_render(pointer.value)} + {index}: the block the mask covers")


# ---------------------------------------------------------------- the ** operator in a kernel

_POW_MESSAGE = re.compile(r"for \*\* or pow\(\)")
_POWERS = {"2": "({b} * {b})", "3": "({b} * {b} * {b})", "0.5": "tl.sqrt({b})", "-1": "(1.0 / {b})",
           "-0.5": "tl.rsqrt({b})", "1": "{b}"}  # fmt: skip


@rule(
    "power_operator",
    title="the ** operator on Triton values (Triton has no pow operator)",
    bug_class="type_mismatch",
    symptoms=("type_mismatch", "compile_error", "runtime_error"),
    per="kernel",
)
def power_operator(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`x ** 2` -> `(x * x)`, `** 0.5` -> `tl.sqrt`, `** -0.5` -> `tl.rsqrt`, `** -1` -> `1.0 / x`, any other
    exponent -> libdevice `pow`: every `**` of the kernel at once (generated kernels repeat it)."""
    if not _POW_MESSAGE.search(str(_crash(context).get("message", ""))):
        return
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for node in findall(fn.body, m.BinaryOperation(operator=m.Power())):
        assert isinstance(node, cst.BinaryOperation)
        base = _operand(node.left)
        exponent = _render(node.right).replace(" ", "")
        form = _POWERS.get(exponent, "tl.extra.cuda.libdevice.pow({b}, " + exponent + ")")
        mapping[node] = _expr(form.format(b=base))
    if mapping:
        first = min(tree.line(n) for n in mapping)
        yield Edit(_replace_many(tree.module, mapping), first, f"{fn.name.value}: ** written as Triton math")


RULES = rules_of(__name__)


# ---------------------------------------------------------------- a dtype called like a NumPy scalar type

_TL_DTYPES = frozenset(
    ("float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint32")
)


@rule(
    "dtype_call",
    title="a Triton dtype called like a NumPy scalar type inside a kernel (`tl.float32(n)`)",
    bug_class="api_drift",
    symptoms=("api_drift", "type_mismatch", "compile_error", "runtime_error"),
    per="kernel",
)
def dtype_call(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`tl.float32(BLOCK_N)` -> `tl.cast(BLOCK_N, tl.float32)`: Triton dtypes are not constructors."""
    if not _crash(context):
        return
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for call in findall(fn.body, m.Call(func=m.Attribute())):
        assert isinstance(call, cst.Call)
        dotted = _dotted(call.func) or ""
        head, _, name = dotted.rpartition(".")
        if head == "tl" and name in _TL_DTYPES and len(call.args) == 1 and call.args[0].keyword is None:
            mapping[call] = _expr(f"tl.cast({_render(call.args[0].value)}, {dotted})")
    if mapping:
        first = min(tree.line(n) for n in mapping)
        yield Edit(_replace_many(tree.module, mapping), first, f"{fn.name.value}: dtypes cast with tl.cast")


# ---------------------------------------------------------------- a reduction called as an elementwise op

_PAIRWISE = {"tl.min": "tl.minimum", "tl.max": "tl.maximum"}


@rule(
    "reduction_as_pairwise",
    title="tl.min / tl.max called with two values (NumPy's minimum/maximum meant)",
    bug_class="api_drift",
    symptoms=("api_drift", "type_mismatch", "compile_error", "runtime_error", "other"),
    per="kernel",
)
def reduction_as_pairwise(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`tl.min(start + BLOCK, n)` reads `n` as the reduction axis (`axis [8] out of bounds`): two values
    compared elementwise are `tl.minimum` / `tl.maximum`. A literal second argument is an axis and stays."""
    if "axis" not in str(_crash(context).get("message", "")):
        return
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for call in findall(fn.body, m.Call(func=m.Attribute())):
        assert isinstance(call, cst.Call)
        new = _PAIRWISE.get(_dotted(call.func) or "")
        args = call.args
        if new is None or len(args) != 2 or any(a.keyword for a in args):
            continue
        if isinstance(args[1].value, cst.Integer):
            continue
        mapping[call] = call.with_changes(func=_expr(new))
    if mapping:
        first = min(tree.line(n) for n in mapping)
        what = f"{fn.name.value}: tl.min/tl.max of two values"
        yield Edit(_replace_many(tree.module, mapping), first, what)
