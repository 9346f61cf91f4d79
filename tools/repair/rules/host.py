"""Host-side rules: the wrapper around the kernel (output dtype, final reduction, launch sizes, scales).

The taxonomy's "wrapper" class: the kernel is right, `ModelNew.forward` allocates, sizes or reduces wrongly.
What the reference means (its reduction mode, ignore_index, output dtype) comes from the rule context.
"""

from __future__ import annotations

import itertools
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
    _constexpr_params,
    _dotted,
    _expr,
    _kernels,
    _launches,
    _names,
    _params,
    _render,
    _scaled_by,
    _swap,
    _tensor_params,
    _with_kwarg,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.compose import _ancestors
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- wrapper (host side)

_ALLOCATORS = ("torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_strided")
_LIKE = ("torch.empty_like", "torch.zeros_like", "torch.ones_like", "torch.full_like")


def _without_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    args = [a for a in call.args if a is not arg]
    if args and call.args[-1] is arg:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


@rule(
    "output_dtype",
    title="output allocated in the input's dtype",
    bug_class="wrapper",
    symptoms=("dtype_mismatch",),
    per="forward",
)
def output_dtype(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """The output is allocated in the input's dtype, not a hard-coded one."""
    tensors = _tensor_params(fn)
    if not tensors:
        return
    x = tensors[0]
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
        yield Edit(new, tree.line(call), f"ModelNew.forward: {what}")


_TORCH_DTYPES = {
    "float32": "torch.float32",
    "float16": "torch.float16",
    "bfloat16": "torch.bfloat16",
    "float64": "torch.float64",
    "int64": "torch.int64",
    "int32": "torch.int32",
    "bool": "torch.bool",
}
_DTYPE_ALIASES = {"torch.long": "torch.int64", "torch.int": "torch.int32", "torch.float": "torch.float32"}


@rule(
    "expected_output_dtype",
    title="the output is allocated in the dtype the reference returns",
    bug_class="wrapper",
    symptoms=("dtype", "dtype_mismatch", "everywhere"),
    per="forward",
)
def expected_output_dtype(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """The output is allocated (or cast) in a hard-coded dtype other than the one the reference returns."""
    wanted = _TORCH_DTYPES.get(context.output_dtype) if context is not None else None
    if wanted is None:
        return
    sites = [a.value for call in _calls(fn.body, *_ALLOCATORS) if (a := _arg(call, "dtype", 99)) is not None]
    for call in findall(fn.body, m.Call(func=m.Attribute(attr=m.Name("to")))):
        assert isinstance(call, cst.Call)
        sites += [a.value for a in call.args[:1] if (_dotted(a.value) or "").startswith("torch.")]
    for site in sites:
        current = _dotted(site) or ""
        if not current.startswith("torch.") or _DTYPE_ALIASES.get(current, current) == wanted:
            continue
        what = f"ModelNew.forward: output dtype {wanted}, as the reference returns"
        yield tree.edit(site, _expr(wanted), what)


# ---------------------------------------------------------------- loss reductions


def _reduction_mode(reference: str) -> str:
    found = re.search(r"reduction\s*=\s*['\"](\w+)['\"]", reference)
    return found.group(1) if found else "mean"


def _ignore_index(context: RuleContext) -> str | None:
    if "ignore_index" not in context.reference_source:
        return None
    found = re.search(r"ignore_index\s*=\s*(-?\d+)", context.reference_source)
    value = context.init_params().get("ignore_index")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return found.group(1) if found else "-100"


def _label_param(params: list[str]) -> str | None:
    for p in params:
        if any(k in p.lower() for k in ("target", "label", "tgt", "class")):
            return p
    return None


@rule(
    "loss_reduction",
    title="a loss reduces as the reference does: sum, mean, or mean over non-ignored targets",
    bug_class="operator_misread",
    symptoms=("everywhere", "constant_ratio", "scalar"),
    per="forward",
)
def loss_reduction(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """The final reduction of a loss follows the reference's mode: sum, mean over all, or over non-ignored."""
    if context is None or "loss" not in context.reference_source.lower():
        return
    tensors = _tensor_params(fn)
    mode = _reduction_mode(context.reference_source)
    ignore = _ignore_index(context)
    label = _label_param(tensors)
    for ret in findall(fn.body, m.Return()):
        assert isinstance(ret, cst.Return)
        value = ret.value
        if value is None:
            continue
        total, divisor = _sum_and_divisor(value)
        if total is None:
            continue
        forms: list[str] = []
        if mode == "sum":
            forms.append(total)
        elif mode in ("mean", "batchmean"):
            if ignore is not None and label is not None:
                forms.append(f"{total} / ({label} != {ignore}).sum()")
            sizes = [f"{t}.numel()" for t in tensors] + [f"{t}.shape[0]" for t in tensors]
            forms += [f"{total} / {s}" for s in sizes]
        current = _render(value).replace(" ", "")
        for form in dict.fromkeys(forms):
            if form.replace(" ", "") == current or (divisor is None and form == total):
                continue
            what = f"ModelNew.forward: return {form} ({mode} reduction)"
            yield Edit(tree.replace(value, _expr(form)), tree.line(ret), what)


def _sum_and_divisor(value: cst.BaseExpression) -> tuple[str | None, str | None]:
    """(`a.sum()` as text, divisor text or None) for `a.sum()`, `a.sum() / d`, `a.mean()`."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Divide):
        total, _ = _sum_and_divisor(value.left)
        return (total, _render(value.right)) if total is not None else (None, None)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args:
        if value.func.attr.value == "sum":
            return _render(value), None
        if value.func.attr.value == "mean":
            return f"{_render(value.func.value)}.sum()", "mean"
    return None, None


# ---------------------------------------------------------------- launch sizes


@rule(
    "block_uncapped",
    title="a single-block row kernel's block covers the whole row",
    bug_class="grid_coverage",
    symptoms=("shape", "columns", "trailing", "untouched_region", "rows"),
    per="module",
)
def block_uncapped(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`min(next_power_of_2(n), CAP)` with no loop over the rest: the block must cover the whole row. The
    same at a launch: a kernel with no loop that masks `tl.arange(0, B)` against its length parameter gets
    `B = triton.next_power_of_2(length)`, whatever the wrapper set B to (a constant, a capped power of 2)."""
    for call in _calls(tree.module, "min"):
        pow2 = [
            a.value
            for a in call.args
            if isinstance(a.value, cst.Call) and "next_power_of_2" in _render(a.value)
        ]
        if len(call.args) != 2 or len(pow2) != 1:
            continue
        what = f"block covers the whole row: {_render(pow2[0])}"
        yield tree.edit(call, pow2[0], what)
    kernels = {k.name.value: k for k in _kernels(tree.module)}
    assigned: dict[str, list[str]] = {}
    for targets, value in _assignments(tree.module):
        for t in targets:
            assigned.setdefault(t, []).append(_render(value))
    for launch in _launches(tree.module):
        kernel = kernels.get(_dotted(launch.func.value) or "")  # type: ignore[attr-defined]
        covered = _row_block(kernel) if kernel is not None else None
        if covered is None:
            continue
        block, length = covered
        names = [p.name.value for p in _params(kernel)]  # type: ignore[arg-type]
        block_arg = _arg(launch, block, names.index(block))
        length_arg = _arg(launch, length, names.index(length))
        if block_arg is None or length_arg is None:
            continue
        whole = f"triton.next_power_of_2({_render(length_arg.value).strip()})"
        given = _render(block_arg.value).strip()
        values = assigned.get(given, [given])
        if given.replace(" ", "") == whole.replace(" ", "") or all(
            "next_power_of_2" in v and "min(" not in v for v in values
        ):
            continue  # already the whole row's power of 2
        what = f"{block} covers the whole row at launch: {whole}"
        yield tree.edit(block_arg.value, _expr(whole), what)


def _row_block(kernel: cst.FunctionDef) -> tuple[str, str] | None:
    """(block constexpr, length parameter) of a kernel that handles a row in one block: a program per row,
    no loop, a `tl.arange(0, B)` not scaled by a program id, and a mask comparing it (or a name computed
    from it alone) with a parameter."""
    if findall(kernel.body, m.For() | m.While()) or not _calls(kernel.body, "tl.program_id"):
        return None  # a loop covers the rest; a kernel blind to its program is another bug
    constexprs = _constexpr_params(kernel)
    plain = {p.name.value for p in _params(kernel)} - constexprs
    text = _render(kernel.body)
    for arange in _calls(kernel.body, "tl.arange"):
        if len(arange.args) != 2 or _render(arange.args[0].value).strip() != "0":
            continue
        block = _render(arange.args[1].value).strip()
        if block not in constexprs or _scaled_by(text, block):
            continue  # tiled by program: the grid covers the rest
        local = _local_aranges(kernel, block)
        for cmp in findall(kernel.body, m.Comparison()):
            assert isinstance(cmp, cst.Comparison)
            left, right = _render(cmp.left).strip(), _render(cmp.comparisons[0].comparator).strip()
            if right in plain and (left in local or _render(arange).strip() in left):
                return block, right
    return None


def _local_aranges(kernel: cst.FunctionDef, block: str) -> set[str]:
    """Names assigned exactly `tl.arange(0, block)`."""
    return {
        t
        for node in findall(kernel.body, m.Assign())
        if isinstance(node, cst.Assign)
        and re.fullmatch(rf"tl\.arange\(0,\s*{block}\)", _render(node.value).strip())
        for target in node.targets
        for t in _names(target.target)
    }


@rule(
    "rows_from_numel",
    title="rows of an N-d input counted as numel // row length",
    bug_class="wrapper",
    symptoms=("shape", "untouched_region", "zero_region", "garbage_region", "leading"),
    per="forward",
)
def rows_from_numel(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`n_rows = x.shape[0]` of an input with more than two dims: rows are numel // row length."""
    lengths: dict[str, str] = {}
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            text = _render(node.value).replace(" ", "")
            found = re.fullmatch(r"(\w+)\.(?:shape\[-1\]|size\(-1\))", text)
            if found:
                lengths[found.group(1)] = node.targets[0].target.value
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        text = _render(node.value).replace(" ", "")
        found = re.fullmatch(r"(\w+)\.(?:shape\[0\]|size\(0\))", text)
        if not found or found.group(1) not in lengths:
            continue
        x = found.group(1)
        new = _expr(f"{x}.numel() // {lengths[x]}")
        what = f"ModelNew.forward: every row of {x}, {x}.numel() // {lengths[x]}"
        yield Edit(tree.replace(node.value, new), tree.line(node), what)


@rule(
    "shape_in_scale",
    title="a scale computed from the right dimension",
    bug_class="operator_misread",
    symptoms=("everywhere", "constant_ratio", "shape"),
    per="forward",
)
def shape_in_scale(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A scale such as `1 / sqrt(d)` read from the wrong dimension of the input's shape."""
    roots = _calls(fn.body, "math.sqrt", "torch.sqrt", "sqrt", "math.rsqrt")
    roots += [
        p
        for p in findall(fn.body, m.BinaryOperation(operator=m.Power()))
        if isinstance(p, cst.BaseExpression)
    ]
    for root in roots:
        for sub in findall(root, m.Subscript(value=m.Attribute(attr=m.Name("shape")))):
            assert isinstance(sub, cst.Subscript)
            index = _render(sub.slice[0].slice).strip() if len(sub.slice) == 1 else ""
            for other in ("-1", "-2", "1", "2", "3"):
                if other == index:
                    continue
                new = sub.with_changes(slice=[cst.SubscriptElement(cst.Index(_expr(other)))])
                what = f"ModelNew.forward: scale from {_render(sub.value)}[{other}], not [{index}]"
                yield tree.edit(sub, new, what)


@rule(
    "zero_accumulated_output",
    title="a buffer accumulated with atomics is allocated with zeros",
    bug_class="wrapper",
    symptoms=("everywhere", "nan", "garbage_region", "scalar"),
    per="forward",
)
def zero_accumulated_output(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A buffer the kernel accumulates into with atomics must start at zero, not as `torch.empty` garbage."""
    kernels = {k.name.value: k for k in _kernels(tree.module)}
    accumulated: set[str] = set()
    for call in _launches(tree.module):
        assert isinstance(call.func, cst.Subscript)
        kernel = kernels.get(_render(call.func.value))
        if kernel is None:
            continue
        params = [p.name.value for p in _params(kernel)]
        targets = {
            n
            for atomic in _calls(kernel.body, "tl.atomic_add", "tl.atomic_max", "tl.atomic_min")
            if atomic.args
            for n in _names(atomic.args[0].value)
        }
        positional = [a for a in call.args if a.keyword is None and not a.star]
        for param, arg in zip(params, positional, strict=False):
            if param in targets and isinstance(arg.value, cst.Name):
                accumulated.add(arg.value.value)
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        names = set().union(*(_names(t.target) for t in node.targets))
        value = node.value
        if not (names & accumulated and isinstance(value, cst.Call)):
            continue
        func = _dotted(value.func) or ""
        if func not in ("torch.empty", "torch.empty_like"):
            continue
        zeros = func.replace("empty", "zeros")
        new = tree.replace(value.func, _expr(zeros))
        what = (
            f"ModelNew.forward: {', '.join(sorted(names))} accumulated with atomics starts at zero ({zeros})"
        )
        yield Edit(new, tree.line(node), what)


@rule(
    "grid_block_pair",
    title="each grid axis is the cdiv of the size its block tiles",
    bug_class="grid_coverage",
    symptoms=("shape", "untouched_region", "zero_region", "garbage_region", "columns", "rows"),
    per="module",
)
def grid_block_pair(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`cdiv(M, BLOCK_N)` in a launch grid: the axis tiled by BLOCK_N has N elements."""
    scope = {n.value for n in findall(tree.module, m.Name()) if isinstance(n, cst.Name)}
    for cdiv in _calls(tree.module, "triton.cdiv", "cdiv"):
        if len(cdiv.args) != 2 or not isinstance(cdiv.args[0].value, cst.Name):
            continue
        size = cdiv.args[0].value
        found = re.search(r"BLOCK_?([A-Za-z]+)", _render(cdiv.args[1].value))
        if not found:
            continue
        axis = found.group(1)
        for wanted in (axis, axis.upper(), axis.lower()):
            if wanted in scope and wanted != size.value and wanted != "SIZE":
                new = tree.replace(size, cst.Name(wanted))
                block = _render(cdiv.args[1].value).strip()
                what = f"grid: the axis tiled by {block} has {wanted} elements, not {size.value}"
                yield Edit(new, tree.line(cdiv), what)
                break


@rule(
    "reciprocal_scale",
    title="a multiplicative scale is the reciprocal of the reference's divisor",
    bug_class="operator_misread",
    symptoms=("everywhere", "constant_ratio", "rows"),
    per="forward",
)
def reciprocal_scale(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A scale applied by multiplication is the reciprocal of a divisor (softmax(x / T), 1 / sqrt(d))."""
    for node in findall(fn.body, m.Assign()):
        assert isinstance(node, cst.Assign)
        names = set().union(*(_names(t.target) for t in node.targets))
        if not any("scale" in n.lower() for n in names):
            continue
        value = node.value
        if (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.Divide)
            and _render(value.left).strip() in ("1", "1.0")
        ):
            new_value = _expr(_render(value.right.with_changes(lpar=[], rpar=[])))
        else:
            divisor = _render(value) if isinstance(value, cst.Name | cst.Attribute) else f"({_render(value)})"
            new_value = _expr(f"1.0 / {divisor}")
        what = f"ModelNew.forward: scale {_render(new_value)}"
        yield Edit(tree.replace(value, new_value), tree.line(node), what)


# ---------------------------------------------------------------- pass_constructor_attribute


def _self_attributes(module: cst.Module) -> set[str]:
    """Attributes `ModelNew.__init__` sets on `self` (`self.negative_slope = negative_slope`)."""
    found: set[str] = set()
    for cls in findall(module, m.ClassDef(name=m.Name("ModelNew"))):
        assert isinstance(cls, cst.ClassDef)
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                for node in findall(stmt.body, m.AssignTarget(target=m.Attribute(value=m.Name("self")))):
                    assert isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Attribute)
                    found.add(node.target.attr.value)
    return found


@rule(
    "pass_constructor_attribute",
    title="the wrapper gets the setting the model was built with, not its own default",
    bug_class="operator_misread",
    symptoms=("everywhere", "scattered", "all_negative", "all_positive", "constant_ratio"),
    per="forward",
)
def pass_constructor_attribute(
    tree: Tree, fn: cst.FunctionDef, context: RuleContext | None
) -> Iterator[Edit]:
    """`forward` calls a host function whose parameter has a default (`negative_slope=0.01`) without
    passing the value the constructor kept under that name (`self.negative_slope`): the default wins."""
    attributes = _self_attributes(tree.module)
    kernels = {k.name.value for k in _kernels(tree.module)}
    functions = {
        f.name.value: f
        for f in tree.module.body
        if isinstance(f, cst.FunctionDef) and f.name.value not in kernels
    }
    for call in _calls(fn.body, *functions):
        if any(a.star for a in call.args):
            continue
        params = functions[_dotted(call.func) or ""].params
        ordered = [*params.posonly_params, *params.params]
        given = sum(1 for a in call.args if a.keyword is None)
        bound = {p.name.value for p in ordered[:given]}
        bound |= {a.keyword.value for a in call.args if a.keyword is not None}
        for p in [*ordered[given:], *params.kwonly_params]:
            name = p.name.value
            attr = next((a for a in (name, f"_{name}") if a in attributes), None)
            if p.default is None or name in bound or attr is None:
                continue
            default = tree.code(p.default)
            what = f"ModelNew.forward: pass self.{attr} as {name} (the default {default} was used)"
            yield tree.edit(call, _with_kwarg(call, name, f"self.{attr}"), what)


# ---------------------------------------------------------------- args_named_for_another


def _spelled(expr: cst.BaseExpression) -> str | None:
    """The name an argument is spelled with: `beta`, `self.beta`, `self._beta`."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value.lstrip("_")
    return None


def _stands_for(spelled: str | None, param: str) -> bool:
    """Whether an argument spelled `spelled` names the parameter `param`: the same name, or one the short
    form of the other (`padding` for `pad`), case aside."""
    if spelled is None:
        return False
    a, b = spelled.lower(), param.lower()
    short, long = sorted((a, b), key=len)
    return a == b or (len(short) >= 3 and long.startswith(short))


@rule(
    "args_named_for_another",
    title="two arguments handed in each other's place, by the callee's parameter names",
    bug_class="wrapper",
    symptoms=("everywhere", "scattered", "constant_ratio", "rows", "columns"),
    per="module",
)
def args_named_for_another(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """A call to a function or kernel of the module hands `self.beta` to the parameter `alpha` and
    `self.alpha` to `beta`: each argument is named after the other's parameter (or its short form: `stride,
    padding` handed to `pad, stride`). They are swapped."""
    functions = [f for f in findall(tree.module, m.FunctionDef()) if isinstance(f, cst.FunctionDef)]
    defined = {f.name.value: f for f in functions}
    for call in [*_calls(tree.module, *defined), *_launches(tree.module)]:
        target = call.func.value if isinstance(call.func, cst.Subscript) else call.func
        fn = defined.get(_dotted(target) or "")
        if fn is None:
            continue
        ordered = [*fn.params.posonly_params, *fn.params.params]
        params = [p.name.value for p in ordered if p.name.value != "self"]
        given = [i for i, a in enumerate(call.args) if a.keyword is None and not a.star][: len(params)]
        spelled = [_spelled(call.args[i].value) for i in given]
        for x, y in itertools.combinations(range(len(given)), 2):
            if (
                params[x] != params[y]
                and _stands_for(spelled[x], params[y])
                and _stands_for(spelled[y], params[x])
                and not _stands_for(spelled[x], params[x])
            ):
                a, b = call.args[given[x]].value, call.args[given[y]].value
                what = f"{params[x]} gets {tree.code(b)} and {params[y]} gets {tree.code(a)}"
                yield Edit(_swap(tree, call, given[x], given[y]), tree.line(a), what)


def _shape_unpacks(fn: cst.FunctionDef) -> list[list[str]]:
    """The names of each `N, C, H, W = x.shape` (or `x.size()`) in `fn`."""
    out: list[list[str]] = []
    for stmt in findall(fn.body, m.Assign()):
        assert isinstance(stmt, cst.Assign)
        value = stmt.value
        if isinstance(value, cst.Call) and not value.args:
            value = value.func  # x.size()
        if not (isinstance(value, cst.Attribute) and value.attr.value in ("shape", "size")):
            continue
        for t in stmt.targets:
            if isinstance(t.target, cst.Tuple | cst.List):
                names = [e.value.value for e in t.target.elements if isinstance(e.value, cst.Name)]
                if len(names) == len(t.target.elements):
                    out.append(names)
    return out


@rule(
    "unused_size",
    title="a size the wrapper unpacks and never uses stands where another size of the same shape is used",
    bug_class="wrapper",
    symptoms=("everywhere", "scattered", "rows", "columns", "periodic", "shape"),
    per="module",
)
def unused_size(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`N, C, H, W = x.shape` with W never read again, and a launch that reads H twice (`H * H`, or H handed
    for both the height and the width): one of those reads is the size the wrapper forgot."""
    kernels = set(_kernels(tree.module))
    all_launches = _launches(tree.module)
    for fn in findall(tree.module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        if fn in kernels:
            continue
        counts: dict[str, int] = {}
        for name in findall(fn.body, m.Name()):
            assert isinstance(name, cst.Name)
            counts[name.value] = counts.get(name.value, 0) + 1
        launches = [c for c in all_launches if any(a is fn for a in _ancestors(tree, c))]
        for names in _shape_unpacks(fn):
            unused = [n for n in names if counts.get(n, 0) == 1 and not n.startswith("_")]
            if not unused or len(unused) == len(names):
                continue
            for call in launches:
                reads = [
                    (arg, read)
                    for arg in call.args
                    for read in findall(arg.value, m.Name())
                    if isinstance(read, cst.Name) and read.value in names
                ]
                twice = {n for n in names if sum(r.value == n for _, r in reads) > 1}
                for arg, read in reads:
                    if read.value not in twice:
                        continue
                    for u in unused:
                        what = f"{fn.name.value}: {read.value} -> {u} in {tree.code(arg.value)}"
                        yield tree.edit(read, cst.Name(u), what)


RULES = rules_of(__name__)
