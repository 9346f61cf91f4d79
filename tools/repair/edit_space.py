"""A general, typed edit space for the statements localisation ranks: small single-site edits no rule names.

Every edit type is a registered `@rule` (ids `edit_*`, bug classes `edit:*`) with the rules' guarantee: one
site changes, every other byte stays. The types (issue 16): operator and function substitution, constants
(with the reference's constructor and forward arguments), variable substitution among in-scope names of the
same kind (variables.py), index-term edits (drop a term or a factor), grid edits, reduction axis and extent,
accumulator dtype and the missing host-side `.contiguous()` on a tensor handed to a kernel. Mask, `other`,
program-id, comparison and bound edits are the mutations' (mutations.py); `generate` orders all of them by
the rank of the statement they touch, so a screening budget is spent where the evidence points first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair import (
    argument_scale,
    factor_placement,
    index_scale,
    lane_term,
    missing_function,
    reductions,
    size_terms,
    spec_checks,
    stale_read,
    statement_order,
    variables,
)
from kernel_medic.tools.repair.rules.base import (
    Edit,
    Rewrite,
    Rule,
    RuleContext,
    Tree,
    _assignments,
    _calls,
    _constexpr_params,
    _dotted,
    _expr,
    _flow_names,
    _kernels,
    _launches,
    _literal_value,
    _names,
    _params,
    _program_id_names,
    _render,
    _tree,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.crash_launch import _kernel_named, _launched
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- operators and functions

_OPERATORS: dict[type, tuple[type, ...]] = {
    cst.Add: (cst.Subtract, cst.Multiply),
    cst.Subtract: (cst.Add,),
    cst.Multiply: (cst.Divide, cst.Add),
    cst.Divide: (cst.Multiply, cst.FloorDivide),
    cst.FloorDivide: (cst.Modulo, cst.Divide),
    cst.Modulo: (cst.FloorDivide,),
}


@rule("edit_operator", title="binary operator substitution", bug_class="edit:operator", guarded=True)
def edit_operator(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`+`<->`-`, `*`<->`/`, `//`<->`%` and neighbours, one operation at a time."""
    for op in findall(fn.body, m.BinaryOperation()):
        assert isinstance(op, cst.BinaryOperation)
        old = op.operator
        for kind in _OPERATORS.get(type(old), ()):
            new_op = kind(whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after)
            new = op.with_changes(operator=new_op)
            yield tree.edit(op, new, f"{fn.name.value}: {tree.code(op)} -> {_render(new)}")
    # An accumulation's sign or direction (`acc += w * v` where every term should be subtracted).
    for aug in findall(fn.body, m.AugAssign()):
        assert isinstance(aug, cst.AugAssign)
        other = _AUGMENTED.get(type(aug.operator))
        if other is not None:
            new_aug = aug.with_changes(operator=other(whitespace_before=aug.operator.whitespace_before))
            yield tree.edit(aug, new_aug, f"{fn.name.value}: {tree.code(aug)} -> {_render(new_aug)}")


_AUGMENTED: dict[type, type] = {
    cst.AddAssign: cst.SubtractAssign,
    cst.SubtractAssign: cst.AddAssign,
    cst.MultiplyAssign: cst.DivideAssign,
    cst.DivideAssign: cst.MultiplyAssign,
}

# Families of interchangeable functions: a call may be swapped for another of its family.
_FUNCTION_FAMILIES: tuple[tuple[str, ...], ...] = (
    ("exp", "exp2"),
    ("log", "log2"),
    ("sqrt", "rsqrt"),
    ("max", "min", "sum"),
    ("maximum", "minimum"),
    ("argmax", "argmin"),
    ("cumsum", "cumprod"),
    ("sin", "cos"),
)


def _function_alternatives(name: str) -> list[str]:
    prefix, _, short = name.rpartition(".")
    if prefix not in ("tl", "tl.math", "torch", "libdevice", "tl.extra.cuda.libdevice"):
        return []
    for family in _FUNCTION_FAMILIES:
        if short in family:
            return [f"{prefix}.{other}" for other in family if other != short]
    return []


@rule("edit_function", title="function substitution within a family", bug_class="edit:function", guarded=True)
def edit_function(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    for call in findall(fn.body, m.Call()):
        assert isinstance(call, cst.Call)
        name = _dotted(call.func)
        for other in _function_alternatives(name or ""):
            new = call.with_changes(func=_expr(other))
            yield tree.edit(call, new, f"{fn.name.value}: {name} -> {other}")
        # A function applied that the reference does not apply (a value already in log space logged again).
        prefix, _, short = (name or "").rpartition(".")
        one_arg = len(call.args) == 1 and call.args[0].keyword is None
        if prefix in _TL_PREFIXES and short in _UNARY and one_arg:
            inner = call.args[0].value
            yield tree.edit(call, inner, f"{fn.name.value}: {tree.code(call)} -> {tree.code(inner)}")


_TL_PREFIXES = ("tl", "tl.math", "libdevice", "tl.extra.cuda.libdevice")
_UNARY = {
    "exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "abs", "sigmoid", "erf", "tanh", "sin", "cos",
}  # fmt: skip


# ---------------------------------------------------------------- constants


def _reference_numbers(context: RuleContext | None) -> list[float]:
    """Numbers the reference is built or called with: constructor values and literal call arguments."""
    if context is None:
        return []
    found: list[float] = [
        float(v)
        for v in context.init_params().values()
        if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    try:
        module = ast.parse(context.reference_source)
    except SyntaxError:
        return found
    for scope in spec_checks.reference_scopes(module):
        for node in ast.walk(scope):
            if isinstance(node, ast.Call):
                values = [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Assign):
                values = [node.value]  # a named constant (`alpha = 1.6732632423543772`)
            else:
                continue
            for arg in values:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, int | float):
                    if not isinstance(arg.value, bool):
                        found.append(float(arg.value))
    return list(dict.fromkeys(found))


@rule(
    "edit_constant",
    title="a literal becomes 0/1/±1 or a reference constant",
    bug_class="edit:constant",
    guarded=True,
)
def edit_constant(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    numbers = _reference_numbers(context)
    for lit in findall(fn.body, m.Integer() | m.Float()):
        assert isinstance(lit, cst.Integer | cst.Float)
        value = _literal_value(lit)
        if value is None or _is_axis_or_arange(tree, lit):
            continue
        options: list[str] = []
        if isinstance(lit, cst.Integer):
            ivalue = int(value)
            options += [str(ivalue + 1), str(ivalue - 1)] if ivalue < 64 else []
            options += ["0", "1"]
        else:
            options += ["0.0", "1.0", "0.5", "2.0"]
            options += [repr(float(v)) for v in numbers]
        for option in dict.fromkeys(options):
            try:
                if float(option) == value or (option.startswith("-") and isinstance(lit, cst.Integer)):
                    continue
            except ValueError:
                continue
            yield tree.edit(lit, _expr(option), f"{fn.name.value}: {lit.value} -> {option}")


def _is_axis_or_arange(tree: Tree, lit: cst.CSTNode) -> bool:
    """Program-id axes and arange starts have edits of their own."""
    parent = tree.parent(lit)
    while parent is not None and not isinstance(parent, cst.Call):
        parent = tree.parent(parent)
    return isinstance(parent, cst.Call) and _dotted(parent.func) in ("tl.program_id", "tl.num_programs")


# ---------------------------------------------------------------- index terms


def _terms(op: cst.BinaryOperation) -> list[cst.BaseExpression]:
    out: list[cst.BaseExpression] = []
    for side in (op.left, op.right):
        if isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Add) and not side.lpar:
            out += _terms(side)
        else:
            out.append(side)
    return out


@rule(
    "edit_index_term", title="drop a term or a factor of an index", bug_class="edit:index_term", guarded=True
)
def edit_index_term(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`a + b*s + c` loses one term; `b * s` loses one factor (an offset or a stride applied wrongly)."""
    for op in findall(fn.body, m.BinaryOperation()):
        assert isinstance(op, cst.BinaryOperation)
        parent = tree.parent(op)
        if isinstance(op.operator, cst.Add) and not (
            isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add) and not op.lpar
        ):
            terms = _terms(op)
            if len(terms) < 2:
                continue
            for i in range(len(terms)):
                rest = " + ".join(_render(t) for j, t in enumerate(terms) if j != i)
                new = _expr(f"({rest})" if op.lpar else rest)
                yield tree.edit(op, new, f"{fn.name.value}: drop {_render(terms[i])} from {tree.code(op)}")
        elif isinstance(op.operator, cst.Subtract) and _names(op.right):
            # `a - b` loses its subtrahend (a term subtracted that the formula does not have).
            left = op.left.with_changes(lpar=op.lpar, rpar=op.rpar) if op.lpar else op.left
            yield tree.edit(op, left, f"{fn.name.value}: drop - {_render(op.right)} from {tree.code(op)}")
        elif isinstance(op.operator, cst.Multiply) and _names(op):
            for keep in (op.left, op.right):
                if _names(keep):
                    yield tree.edit(op, keep, f"{fn.name.value}: {tree.code(op)} -> {_render(keep)}")


@rule(
    "edit_row_offset",
    title="a program offset term added to a pointer",
    bug_class="edit:index_term",
    guarded=True,
)
def edit_row_offset(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A load/store address that no program id reaches gets `pid * S` (S a stride, size or block of the
    kernel): one program per row or block that forgot its row offset writes the same place every time."""
    pids = sorted(_program_id_names(fn))
    params = [p.name.value for p in _params(fn)]
    kind = variables._name_kind
    scales = [n for n in params if kind(n, set(pids), set(), _constexpr_params(fn)) in ("stride", "size")]
    scales += sorted(_constexpr_params(fn))
    if not pids or not scales:
        return
    flow = _flow_names(fn)
    for call in _calls(fn.body, "tl.load", "tl.store"):
        if not call.args:
            continue
        address = call.args[0].value
        reached = set().union(*(flow.get(n, {n}) for n in _names(address)))
        if reached & set(pids):
            continue
        for pid in pids:
            for scale in dict.fromkeys(scales):
                new = _expr(f"{_render(address)} + {pid} * {scale}")
                what = f"{fn.name.value}: {tree.code(address)} + {pid} * {scale}"
                yield tree.edit(address, new, what)


# ---------------------------------------------------------------- accumulator dtype (axes: reductions.py)


_NARROW = {"tl.float16", "tl.bfloat16", "tl.float8e4nv", "tl.int8", "tl.int16", "tl.int32"}


@rule("edit_acc_dtype", title="accumulate in float32", bug_class="edit:acc_dtype", guarded=True)
def edit_acc_dtype(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A narrow dtype in `tl.zeros`/`.to()`/`dtype=` becomes float32; a load is widened to float32."""
    for attr in findall(fn.body, m.Attribute()):
        assert isinstance(attr, cst.Attribute)
        if _dotted(attr) in _NARROW:
            yield tree.edit(attr, _expr("tl.float32"), f"{fn.name.value}: {tree.code(attr)} -> tl.float32")
    for load in _calls(fn.body, "tl.load"):
        parent = tree.parent(load)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "to":
            continue
        new = _expr(f"{tree.code(load)}.to(tl.float32)")
        yield tree.edit(load, new, f"{fn.name.value}: widen a load to float32")


# ---------------------------------------------------------------- rounding: floor against ceiling


def _ceil_parts(node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(a, b) of a ceiling division written `cdiv(a, b)` or `(a + b - 1) // b`."""
    if isinstance(node, cst.Call) and (_dotted(node.func) or "").rpartition(".")[2] == "cdiv":
        if len(node.args) == 2 and all(a.keyword is None for a in node.args):
            return node.args[0].value, node.args[1].value
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.FloorDivide):
        top = node.left
        if (
            isinstance(top, cst.BinaryOperation)
            and isinstance(top.operator, cst.Subtract)
            and _literal_value(top.right) == 1
            and isinstance(top.left, cst.BinaryOperation)
            and isinstance(top.left.operator, cst.Add)
            and _render(top.left.right) == _render(node.right)
        ):
            return top.left.left, node.right
    return None


def _atom(node: cst.BaseExpression) -> str:
    """The expression's code, parenthesised unless it binds tighter than `//`."""
    code = _render(node)
    simple = isinstance(node, cst.Name | cst.Attribute | cst.Call | cst.Integer | cst.Subscript)
    return code if simple or node.lpar else f"({code})"


_ROUNDING_FUNCTIONS = {"floor": "ceil", "ceil": "floor"}
_ROUNDED = m.BinaryOperation(operator=m.FloorDivide()) | m.Call()


@rule("edit_rounding", title="floor against ceiling division", bug_class="edit:rounding", per="module",
      guarded=True)  # fmt: skip
def edit_rounding(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`a // b` becomes a ceiling division and a ceiling division becomes `a // b`, in kernels and wrappers.

    A count rounded the wrong way drops a tail (a K loop's trip count, a grid, a pooling window's end) or
    adds a phantom one (an output length in floor mode); `floor`/`ceil` calls swap for the same reason.
    """
    kernels = set(_kernels(tree.module))
    for fn in findall(tree.module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        ceil = "tl.cdiv" if fn in kernels else "triton.cdiv"
        where = fn.name.value
        nested = {id(n) for inner in findall(fn.body, m.FunctionDef()) for n in findall(inner, _ROUNDED)}
        for node in findall(fn.body, _ROUNDED):
            if id(node) in nested:
                continue  # a nested function's own pass renders it with its own spelling
            assert isinstance(node, cst.BinaryOperation | cst.Call)
            parts = _ceil_parts(node)
            if parts is not None:
                floor = _expr(f"{_atom(parts[0])} // {_atom(parts[1])}")
                yield tree.edit(node, floor, f"{where}: {tree.code(node)} -> {_render(floor)}")
            elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.FloorDivide):
                new = _expr(f"{ceil}({_render(node.left)}, {_render(node.right)})")
                yield tree.edit(node, new, f"{where}: {tree.code(node)} -> {_render(new)}")
            elif isinstance(node, cst.Call):
                prefix, _, short = (_dotted(node.func) or "").rpartition(".")
                if short in _ROUNDING_FUNCTIONS and prefix in ("tl", "tl.math", "math", "torch", "libdevice"):
                    new = node.with_changes(func=_expr(f"{prefix}.{_ROUNDING_FUNCTIONS[short]}"))
                    swapped = f"{prefix}.{_ROUNDING_FUNCTIONS[short]}"
                    yield tree.edit(node, new, f"{where}: {prefix}.{short} -> {swapped}")


# ---------------------------------------------------------------- host side: grids and layouts


def _host_functions(module: cst.Module) -> list[cst.FunctionDef]:
    """Non-kernel functions that launch a kernel (wrappers and `forward`)."""
    kernels = set(_kernels(module))
    return [
        fn
        for fn in findall(module, m.FunctionDef())
        if isinstance(fn, cst.FunctionDef) and fn not in kernels and _launches(fn)  # type: ignore[arg-type]
    ]


_VIEWS = {
    "permute", "transpose", "reshape", "view", "t", "expand", "narrow", "select", "movedim", "unsqueeze",
    "squeeze", "flatten", "unflatten", "as_strided", "swapaxes", "mT", "T", "expand_as", "view_as",
}  # fmt: skip


def _makes_view(value: cst.BaseExpression) -> bool:
    """An expression whose result may be a strided view: a view method call, `.T`, or a slice."""
    node = value
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value in _VIEWS
    return isinstance(node, cst.Subscript)


@rule("edit_contiguous", title="make a tensor handed to a kernel contiguous", bug_class="edit:host_layout",
      per="module", guarded=True)  # fmt: skip
def edit_contiguous(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`.contiguous()` on a view assigned in a wrapper, or just before a launch on a name it is handed."""
    for fn in _host_functions(tree.module):
        for stmt in findall(fn.body, m.Assign()):
            assert isinstance(stmt, cst.Assign)
            if _makes_view(stmt.value) and len(stmt.targets) == 1:
                new_value = _expr(f"({_render(stmt.value)}).contiguous()")
                if isinstance(stmt.value, cst.Call | cst.Attribute | cst.Subscript):
                    new_value = _expr(f"{_render(stmt.value)}.contiguous()")
                what = f"{fn.name.value}: {tree.code(stmt.targets[0].target)} = ... .contiguous()"
                yield tree.edit(stmt.value, new_value, what)
        for launch in _launches(fn):  # type: ignore[arg-type]
            done: set[str] = set()
            compile_time = _compile_time_args(tree, launch)
            for i, arg in enumerate(launch.args):
                if not isinstance(arg.value, cst.Name) or arg.value.value in done | _CONSTANTS:
                    continue
                if i in compile_time:
                    continue  # a launch option or a compile-time parameter: never a tensor
                name = arg.value.value
                done.add(name)
                if name in _scalar_names(fn):
                    continue
                inserted = tree.insert_before(launch, f"{name} = {name}.contiguous()")
                if inserted is not None:
                    module, line = inserted
                    yield Edit(module, line, f"{fn.name.value}: {name}.contiguous() before the launch")


_CONSTANTS = {"True", "False", "None"}
_LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion"}


def _compile_time_args(tree: Tree, launch: cst.Call) -> set[int]:
    """Positions of a launch's arguments that are launch options or bound to the launched kernel's
    `tl.constexpr` parameters (by keyword or by position)."""
    kernel = _kernel_named(tree, _launched(launch) or "")
    params = [p.name.value for p in _params(kernel)] if kernel is not None else []
    constexpr = _constexpr_params(kernel) if kernel is not None else set()
    out = set()
    for i, arg in enumerate(launch.args):
        bound = arg.keyword.value if arg.keyword is not None else params[i] if i < len(params) else None
        if bound in _LAUNCH_OPTIONS or bound in constexpr:
            out.add(i)
    return out


def _scalar_names(fn: cst.FunctionDef) -> set[str]:
    """Names that hold Python numbers: annotated int/float, or assigned from shapes, sizes and arithmetic."""
    out = {
        p.name.value
        for p in _params(fn)
        if p.annotation and _dotted(p.annotation.annotation) in ("int", "float", "bool")
    }
    for targets, value in _assignments(fn.body):
        text = _render(value)
        if ".shape" in text or ".size(" in text or ".stride(" in text or "numel()" in text:
            out |= targets
        elif isinstance(value, cst.Integer | cst.Float | cst.BinaryOperation):
            out |= targets
        elif isinstance(value, cst.Call) and _dotted(value.func) in (
            "triton.next_power_of_2", "triton.cdiv", "min", "max", "int", "float", "len",
        ):  # fmt: skip
            out |= targets
    return out


def _grid_tuple(tree: Tree, launch: cst.Call, fn: cst.FunctionDef) -> cst.Tuple | None:
    """The grid's tuple: written in the launch, a lambda's body, or the value of the name it uses."""
    assert isinstance(launch.func, cst.Subscript)
    grid = launch.func.slice[0].slice
    expr = grid.value if isinstance(grid, cst.Index) else None
    if isinstance(expr, cst.Name):
        for targets, value in _assignments(fn.body):
            if expr.value in targets:
                expr = value
    if isinstance(expr, cst.Lambda):
        expr = expr.body
    return expr if isinstance(expr, cst.Tuple) else None


@rule("edit_grid", title="grid size or dimension edits", bug_class="edit:grid", per="module", guarded=True)
def edit_grid(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Each grid entry becomes another size of the wrapper (or its blocks' count); a dimension is added."""
    for fn in _host_functions(tree.module):
        sizes = sorted(n for n in _scalar_names(fn) if not n.isupper() or len(n) <= 2)
        blocks = sorted(n for n in _scalar_names(fn) if "block" in n.lower())
        for launch in _launches(fn):  # type: ignore[arg-type]
            # A block size handed over as a literal (`BLOCK=256`) counts blocks as well as a named one.
            given = [_render(a.value) for a in launch.args if _blockish(a)]
            here = list(dict.fromkeys([*blocks, *(b for b in given if b.isdigit())]))
            options = sizes + [f"triton.cdiv({s}, {b})" for s in sizes for b in here]
            options += _covering(fn, launch, here)
            assert isinstance(launch.func, cst.Subscript)
            if len(launch.func.slice) > 1 and _axes_read(tree.module, launch) <= {0}:
                # `kernel[blocks, threads]` (CUDA's launch) runs as a 2-D grid repeating every program: one
                # axis, resized.
                first = launch.func.slice[0].slice
                head = [_render(first.value)] if isinstance(first, cst.Index) else []
                for option in dict.fromkeys([*head, *options]):
                    new_func = _expr(f"{_render(launch.func.value)}[({option},)]")
                    yield tree.edit(launch.func, new_func, f"{fn.name.value}: grid = ({option},)")
            grid = _grid_tuple(tree, launch, fn)
            if grid is None:
                continue
            # A grid built lines above its launch (`grid = (n,)`) ranks with the launch too: localisation
            # points at the launch that leaves the output unwritten, not at the tuple it reads.
            launched = (tree.line(launch),)
            entries = [e.value for e in grid.elements]
            # An axis the kernel reads that the grid lacks (`tl.program_id(1)` under a 1-D grid): every
            # program runs as that axis's first, and the tiles past it are never written. It comes first, with
            # its count of blocks (`triton.cdiv(L, BLOCK_L)`), not only a program per element.
            added = options if len(entries) in _axes_read(tree.module, launch) else sizes
            for option in dict.fromkeys(added if len(entries) < 3 else []):
                new = _expr("(" + ", ".join([*(_render(e) for e in entries), option]) + ",)")
                what = f"{fn.name.value}: grid gets a dimension {option}"
                yield tree.edit(grid, new, what, also=launched)
            for i, entry in enumerate(entries):
                for option in options:
                    if option != _render(entry):
                        what = f"{fn.name.value}: grid[{i}] = {option}"
                        yield tree.edit(entry, _expr(option), what, also=launched)
            if len(entries) > 1 and _axes_read(tree.module, launch) <= {0}:
                # CUDA habit: (blocks, threads per block) for a kernel that reads only axis 0. The extra
                # axes repeat every program (and multiply an interpreter's cost): one axis, resized.
                for option in dict.fromkeys([_render(entries[0]), *options]):
                    what = f"{fn.name.value}: grid = ({option},)"
                    yield tree.edit(grid, _expr(f"({option},)"), what, also=launched)


def _blockish(arg: cst.Arg) -> bool:
    return arg.keyword is not None and "block" in arg.keyword.value.lower()


def _axes_read(module: cst.Module, launch: cst.Call) -> set[int]:
    """The `tl.program_id` axes the launched kernel reads ({99} when one is not a literal)."""
    name = _dotted(launch.func.value) if isinstance(launch.func, cst.Subscript) else None
    axes: set[int] = set()
    for kernel in _kernels(module):
        if kernel.name.value != name:
            continue
        for call in _calls(kernel.body, "tl.program_id"):
            arg = call.args[0].value if call.args else None
            axes.add(int(arg.value) if isinstance(arg, cst.Integer) else 99)
    return axes if name else {99}


@rule("edit_launch_tensor", title="a tensor handed to a kernel becomes another tensor of the wrapper",
      bug_class="edit:variable", per="module", guarded=True)  # fmt: skip
def edit_launch_tensor(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """The wrong tensor handed to a launch (a later kernel fed the previous one's output instead of the
    input, two outputs swapped): each tensor argument becomes each other tensor the wrapper holds."""
    for fn in _host_functions(tree.module):
        scalars = _scalar_names(fn) | _CONSTANTS
        allocated = _allocated(fn)
        params = [p.name.value for p in _params(fn) if p.name.value not in scalars | {"self"}]
        tensors = list(dict.fromkeys([*params, *allocated]))
        for launch in _launches(fn):  # type: ignore[arg-type]
            for arg in launch.args:
                if not isinstance(arg.value, cst.Name) or arg.value.value not in tensors:
                    continue
                for other in tensors:
                    if other != arg.value.value:
                        what = f"{fn.name.value}: launch argument {arg.value.value} -> {other}"
                        yield tree.edit(arg.value, cst.Name(other), what)


@rule("edit_size_tensor", title="a size read from another tensor of the wrapper", bug_class="edit:variable",
      per="module", guarded=True)  # fmt: skip
def edit_size_tensor(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`n = input.numel()` where the output was meant (a broadcast input is smaller than what the launch
    must cover): the tensor a `.numel()` reads becomes each other tensor of the wrapper. (`.shape` reads
    unpack dimensions everywhere in a wrapper: swapping their tensors crowded out the kernel's edits.)"""
    for fn in _host_functions(tree.module):
        scalars = _scalar_names(fn) | _CONSTANTS
        params = [p.name.value for p in _params(fn) if p.name.value not in scalars | {"self"}]
        tensors = list(dict.fromkeys([*params, *_allocated(fn)]))
        for node in findall(fn.body, m.Attribute(value=m.Name(), attr=m.Name("numel"))):
            assert isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            if node.value.value not in tensors:
                continue
            for other in tensors:
                if other != node.value.value:
                    what = f"{fn.name.value}: {node.value.value}.numel -> {other}.numel"
                    yield tree.edit(node.value, cst.Name(other), what)


_ALLOCATORS = {
    "torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_like", "torch.zeros_like",
    "torch.ones_like", "torch.full_like", "torch.empty_strided",
}  # fmt: skip


def _allocated(fn: cst.FunctionDef) -> list[str]:
    """Names the wrapper binds to a tensor it allocates with torch, in source order."""
    return [
        name
        for targets, value in _assignments(fn.body)
        if isinstance(value, cst.Call) and _dotted(value.func) in _ALLOCATORS
        for name in sorted(targets)
    ]


def _covering(fn: cst.FunctionDef, launch: cst.Call, blocks: list[str]) -> list[str]:
    """Grid sizes that cover an output the wrapper allocates or an input handed to the kernel: one program
    per element, per block of elements, per leading index or per row of the last dimension.

    A grid left at one program, at the number of blocks of one row, or at a size that is not the output's
    leaves most of a `torch.empty` unwritten (the commonest real-world near-miss): these are its fixes.
    """
    outputs = _allocated(fn)
    # Tensors the wrapper was given (a parameter without a None default) and hands to the kernel.
    given = {
        p.name.value
        for p in _params(fn)
        if not (isinstance(p.default, cst.Name) and p.default.value == "None")
    }
    handed = [
        a.value.value
        for a in launch.args
        if isinstance(a.value, cst.Name) and a.value.value in given - _scalar_names(fn)
    ]
    options: list[str] = []
    for name in dict.fromkeys([*outputs, *handed]):
        options += [f"{name}.numel()", f"{name}.shape[0]", f"{name}.numel() // {name}.shape[-1]"]
        if name in outputs:
            options += [f"triton.cdiv({name}.numel(), {b})" for b in blocks]
    return options


@rule("edit_flag", title="a flag computed for a launch set to True or False", bug_class="edit:constant",
      per="module", guarded=True)  # fmt: skip
def edit_flag(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """A launch flag the wrapper computes from a test (`HAS_SCALE = x.dtype != torch.float32`) set to each
    constant: a generation that guards the right code path with the wrong condition."""
    tests = (cst.Comparison, cst.BooleanOperation)
    for fn in _host_functions(tree.module):
        values = {next(iter(t)): v for t, v in _assignments(fn.body) if len(t) == 1}
        for launch in _launches(fn):  # type: ignore[arg-type]
            for arg in launch.args:
                if arg.keyword is None:
                    continue
                node = values.get(arg.value.value) if isinstance(arg.value, cst.Name) else arg.value
                negated = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)
                if not isinstance(node, tests) and not negated:
                    continue
                for constant in ("True", "False"):
                    what = f"{fn.name.value}: {arg.keyword.value} = {constant}, not {_render(node)}"
                    yield tree.edit(node, cst.Name(constant), what)


EDITS: dict[str, Rule] = {
    r.id: r
    for module in (
        __name__,
        spec_checks.__name__,
        size_terms.__name__,
        index_scale.__name__,
        missing_function.__name__,
        statement_order.__name__,
        factor_placement.__name__,
        argument_scale.__name__,
        lane_term.__name__,
        reductions.__name__,
        variables.__name__,
        stale_read.__name__,
    )
    for r in rules_of(module)
}

# Cheaper-to-believe edit types first within one statement (one line may carry many edits).
_TYPE_ORDER = (
    "edit_contiguous", "mut_add_mask", "mut_load_other", "mut_compare", "edit_rounding", "edit_size_term",
    "mut_bound_pm1",
    "edit_grid", "edit_launch_tensor", "edit_flag",
    "edit_spec_divisor", "edit_unread_attribute", "mut_program_id", "edit_reduction", "edit_acc_dtype",
    "edit_variable",
    "edit_swap_names", "edit_divmod_divisor",
    "edit_index_term", "edit_index_scale", "edit_lane_term", "edit_global_lanes", "edit_row_offset",
    "mut_swap_args",
    "edit_function", "edit_stale_read", "edit_missing_function", "edit_statement_order",
    "edit_factor_placement", "edit_argument_scale",
    "edit_operator", "mut_literal", "edit_constant",
    # Last at a statement: rarely the bug where another edit also applies, and they offer many.
    "edit_size_tensor", "edit_index_wrap",
)  # fmt: skip


def statement_spans(source: str) -> list[tuple[int, int]]:
    """(first, last) lines of every simple statement and compound-statement header in the source."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return []
    spans = []
    for node in ast.walk(module):
        if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef | ast.ClassDef):
            body = getattr(node, "body", None)
            end = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno
            spans.append((node.lineno, max(node.lineno, end or node.lineno)))
    return spans


def generate(
    source: str,
    context: RuleContext | None = None,
    ranked_lines: Sequence[int] | None = None,
    only_ranked: bool = False,
    extra: dict[str, Rule] | None = None,
) -> list[Rewrite]:
    """Every edit of the space (and of `extra` rules, e.g. the mutations), best-ranked statement first.

    `ranked_lines` are statement lines, most suspect first; an edit ranks by the statement holding its line.
    Unranked edits follow (or are dropped with `only_ranked`). Within a statement, `_TYPE_ORDER` decides.
    """
    rules = {**EDITS, **(extra or {})}
    spans = statement_spans(source)
    rank: dict[int, int] = {}
    for r, line in enumerate(ranked_lines or []):
        for lo, hi in spans:
            if lo <= line <= hi:
                for x in range(lo, hi + 1):
                    rank.setdefault(x, r)
        rank.setdefault(line, r)
    order = {rid: i for i, rid in enumerate(_TYPE_ORDER)}
    seen, out = {source}, []
    if _tree(source) is None:
        return []
    for item in rules.values():
        for rewrite in item.apply(source, context):
            if rewrite.source in seen:
                continue
            if only_ranked and rewrite.line not in rank:
                continue
            seen.add(rewrite.source)
            out.append(rewrite)
    big = len(rank) + 1
    # An edit that changes several statements (a swap) ranks by the most suspect of them.
    out.sort(
        key=lambda rw: (min(rank.get(x, big) for x in (rw.line, *rw.also)), order.get(rw.rule, len(order)))
    )
    return out
