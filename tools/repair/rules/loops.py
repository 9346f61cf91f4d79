"""Launch grid and K loops: cover every block, advance and mask the K tiles."""

from __future__ import annotations

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
    _for_loops,
    _is_arange,
    _is_number,
    _kernels,
    _launches,
    _names,
    _params,
    _program_id_names,
    _render,
    _replace_many,
    _values_of,
    _with_kwarg,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- grid_cdiv


def _with_triton_import(module: cst.Module) -> cst.Module:
    for imp in findall(module, m.Import()):
        assert isinstance(imp, cst.Import)
        if any(_dotted(a.name) == "triton" and a.asname is None for a in imp.names):
            return module
    body = list(module.body)
    at = 0
    # The import goes after a module docstring and `from __future__` imports, which must come first.
    while at < len(body) and m.matches(
        body[at],
        m.SimpleStatementLine(body=[m.Expr(m.SimpleString())])
        | m.SimpleStatementLine(body=[m.ImportFrom(module=m.Name("__future__"))]),
    ):
        at += 1
    return module.with_changes(body=[*body[:at], cst.parse_statement("import triton\n"), *body[at:]])


def _grid_expressions(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    in_grid: set[str] = set()
    for call in findall(module, m.Call(func=m.Subscript())):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Subscript)
        found.extend(call.func.slice)
        in_grid |= set().union(*(_names(s) for s in call.func.slice))
    # `n_blocks = n // BLOCK` then `kernel[(n_blocks,)]`: the grid's size is computed a line earlier.
    for targets, value in _assignments(module):
        if any("grid" in t.lower() for t in targets) or targets & in_grid:
            found.append(value)
    return found


def _is_ceil_division(op: cst.BinaryOperation) -> bool:
    """`(a + b - 1) // b` already rounds up."""
    left = op.left
    return (
        isinstance(left, cst.BinaryOperation)
        and isinstance(left.operator, cst.Subtract)
        and _is_number(left.right, 1)
    )


@rule(
    "grid_cdiv",
    title="launch grid rounds up with triton.cdiv",
    bug_class="grid_coverage",
    symptoms=("tail_block", "trailing", "untouched_region", "zero_region", "garbage_region", "shape"),
    per="module",
)
def grid_cdiv(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    seen: set[int] = set()
    for expr in _grid_expressions(tree.module):
        cdivs = _calls(expr, "triton.cdiv", "cdiv")
        inside_cdiv = {id(n) for c in cdivs for n in findall(c, m.BinaryOperation())}
        for op in findall(expr, m.BinaryOperation(operator=m.FloorDivide())):
            assert isinstance(op, cst.BinaryOperation)
            if id(op) in seen or id(op) in inside_cdiv or _is_ceil_division(op):
                continue
            seen.add(id(op))

            def bare(e: cst.BaseExpression) -> cst.BaseExpression:
                return e if isinstance(e, cst.Tuple | cst.GeneratorExp) else e.with_changes(lpar=[], rpar=[])

            call = cst.Call(
                func=cst.parse_expression("triton.cdiv"),
                args=[
                    cst.Arg(bare(op.left), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    cst.Arg(bare(op.right)),
                ],
                lpar=op.lpar,
                rpar=op.rpar,
            )
            new = _with_triton_import(tree.replace(op, call))
            what = f"grid: {tree.code(op)} -> {cst.Module([]).code_for_node(call)}"
            yield Edit(new, tree.line(op), what)


# ---------------------------------------------------------------- K loop


@rule(
    "k_loop_advance",
    title="K-loop pointers advance by BLOCK_K * stride_k",
    bug_class="k_loop",
    symptoms=("grows_with_magnitude", "everywhere", "scattered", "shape"),
)
def k_loop_advance(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`a_ptrs += BLOCK_K` moves by elements of the pointer's first axis: scale by the K stride."""
    strides = [p.name.value for p in _params(fn) if "stride" in p.name.value.lower()]
    k_strides = [s for s in strides if s.lower().endswith("k")] or strides
    constexpr = _constexpr_params(fn)
    for loop in _for_loops(fn):
        for node in findall(loop.body, m.AugAssign(operator=m.AddAssign())):
            assert isinstance(node, cst.AugAssign)
            step = node.value
            if not (isinstance(step, cst.Name) and (step.value in constexpr or "BLOCK" in step.value)):
                continue
            target = _render(node.target)
            ranked = sorted(
                k_strides,
                key=lambda s, t=target: 0 if s.lower().replace("stride_", "")[:1] == t[:1] else 1,
            )
            for stride in ranked:
                new = tree.replace(step, _expr(f"{step.value} * {stride}"))
                what = f"{fn.name.value}: {target} advances by {step.value} * {stride}"
                yield Edit(new, tree.line(step), what)


@rule(
    "k_loop_tail",
    title="K loop rounds up and masks the last K block",
    bug_class="k_loop",
    symptoms=("shape", "everywhere", "scattered", "garbage_region"),
)
def k_loop_tail(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """K loops round up (`tl.cdiv`) and mask the last partial K block of both operands."""
    values = _values_of(fn)
    k_offsets = {n for n, vs in values.items() if len(vs) == 1 and _is_arange(vs[0])}
    for loop in _for_loops(fn):
        it = loop.iter
        if not (isinstance(it, cst.Call) and _dotted(it.func) in ("range", "tl.range", "tl.static_range")):
            continue
        bounds = [a.value for a in it.args if a.keyword is None]
        stop = bounds[1] if len(bounds) >= 2 else bounds[0] if bounds else None
        if isinstance(stop, cst.Name) and len(values.get(stop.value, [])) == 1:
            # `n_tiles = K // BLOCK_K; for k in range(n_tiles)`: the trip count is the assigned value.
            stop = values[stop.value][0]
        if isinstance(stop, cst.BinaryOperation) and isinstance(stop.operator, cst.FloorDivide):
            call = _expr(f"tl.cdiv({_render(stop.left)}, {_render(stop.right)})")
            new = tree.replace(stop, call)
            yield Edit(new, tree.line(stop), f"K loop: {tree.code(stop)} -> cdiv")
            k_total, block = _render(stop.left), _render(stop.right)
        elif (
            isinstance(stop, cst.Call)
            and _dotted(stop.func) in ("tl.cdiv", "triton.cdiv")
            and len(stop.args) == 2
        ):
            k_total, block = _render(stop.args[0].value), _render(stop.args[1].value)
        elif len(bounds) == 3 and stop is not None:
            k_total, block = _render(stop), ""
        else:
            continue
        k = _render(loop.target)
        left = f"{k_total} - {k} * {block}" if block else f"{k_total} - {k}"
        # K offsets built inside the loop from the loop variable are absolute: compare them with K itself.
        absolute = {
            n
            for n, vs in values.items()
            if len(vs) == 1 and not _is_arange(vs[0]) and _calls(vs[0], "tl.arange") and k in _names(vs[0])
        }
        masked: dict[cst.CSTNode, cst.CSTNode] = {}
        for load in _calls(loop.body, "tl.load"):
            pointer = _arg(load, "pointer", 0)
            if pointer is None:
                continue
            subs: list[tuple[cst.BaseExpression, bool]] = []
            for name in _names(pointer.value):
                for v in [pointer.value, *values.get(name, [])]:
                    for sub in findall(v, m.Subscript()):
                        assert isinstance(sub, cst.Subscript)
                        inner = _names(sub.value)
                        if inner & (k_offsets | absolute):
                            # `(k + offs_k)[None, :]` is absolute too: it already adds the loop variable.
                            subs.append((sub, bool(inner & absolute) or k in inner))
            if not subs:
                # A 1-D tile uses the offsets name itself, without a broadcast subscript.
                flat = [
                    n
                    for v in [
                        pointer.value,
                        *(values.get(x, [])[0] for x in _names(pointer.value) if len(values.get(x, [])) == 1),
                    ]
                    for n in sorted(_names(v) & (k_offsets | absolute))
                ]
                subs = [(cst.Name(flat[0]), flat[0] in absolute)] if flat else []
            if not subs:
                continue
            sub, is_absolute = subs[0]
            tail = f"{_render(sub)} < {k_total if is_absolute else left}"
            old_mask = _arg(load, "mask", 1)
            if old_mask is None:
                new_load = _with_kwarg(_with_kwarg(load, "mask", tail), "other", "0.0")
            elif _names(old_mask.value) & (k_offsets | absolute):
                continue  # already masks the K axis
            else:
                both = cst.parse_expression(f"({_render(old_mask.value)}) & ({tail})")
                new_load = load.with_changes(
                    args=[a.with_changes(value=both) if a is old_mask else a for a in load.args]
                )
                if _arg(load, "other", 2) is None:
                    new_load = _with_kwarg(new_load, "other", "0.0")
            masked[load] = new_load
            new = tree.replace(load, new_load)
            what = f"{fn.name.value}: mask the K tail of the load ({tail})"
            yield Edit(new, tree.line(load.args[-1], end=True), what)
        if len(masked) > 1:
            # Both operands of a dot need the tail mask: one masked operand still multiplies garbage.
            first = next(iter(masked))
            new = _replace_many(tree.module, masked)
            what = f"{fn.name.value}: mask the K tail of all {len(masked)} loads in the loop"
            yield Edit(new, tree.line(first), what)
        floor = isinstance(stop, cst.BinaryOperation) and isinstance(stop.operator, cst.FloorDivide)
        if masked and floor and stop is not None:
            # Rounding the trip count up only helps once the extra block's loads are masked: do both.
            rounded = {stop: _expr(f"tl.cdiv({k_total}, {block})"), **masked}
            new = _replace_many(tree.module, rounded)
            what = f"{fn.name.value}: K loop rounds up (cdiv) and masks the tail of {len(masked)} loads"
            yield Edit(new, tree.line(stop), what)


RULES = rules_of(__name__)


# ---------------------------------------------------------------- programs that all do the same work


@rule(
    "program_blind_index",
    title="offset a program-blind index by the program id and size the grid by the output",
    bug_class="grid_coverage",
    symptoms=("untouched_region", "zero_region", "garbage_region", "constant_ratio", "shape"),
    per="module",
    guarded=True,
)
def program_blind_index(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """A kernel that never reads `tl.program_id` indexes the same block in every program (`idx =
    tl.arange(0, BLOCK)` and a grid of one): its block becomes the program's block, `pid * BLOCK +
    tl.arange(0, BLOCK)`, and each launch's grid becomes the blocks of the output the wrapper allocates.

    Two sites change together: neither alone writes more of the output (more programs write the same block;
    an offset with one program still writes one block).
    """
    kernels = {k.name.value: k for k in _kernels(tree.module)}
    for name, kernel in kernels.items():
        if _calls(kernel.body, "tl.program_id"):
            continue
        for stmt in findall(kernel.body, m.Assign(value=m.Call())):
            assert isinstance(stmt, cst.Assign)
            call = stmt.value
            if not isinstance(call, cst.Call) or _dotted(call.func) != "tl.arange" or len(call.args) != 2:
                continue
            start = call.args[0].value
            if not isinstance(start, cst.Integer) or start.value != "0":
                continue
            block = tree.code(call.args[1].value)
            offset = _expr(f"tl.program_id(0) * {block} + {tree.code(call)}")
            first = Tree(tree.replace(call, offset).code)
            host_block = _host_value(first, name, block)
            if host_block is None:
                continue
            for launch in _launches(first.module):
                if _dotted(launch.func.value) != name:  # type: ignore[attr-defined]
                    continue
                grid = _grid_node(first, launch)
                output = _allocated_output(first, launch)
                if grid is None or output is None:
                    continue
                size = f"{output}.numel()"
                if host_block != "1":
                    size = f"triton.cdiv({size}, {host_block})"
                new = first.replace(grid, _expr(f"({size},)"))
                what = f"{name}: block offset by the program id, grid = {size}"
                yield Edit(_with_triton_import(new), tree.line(stmt), what)


def _host_value(tree: Tree, kernel: str, block: str) -> str | None:
    """The host's value of a kernel's block size: a literal, or what launches pass for that parameter."""
    if block.isdigit():
        return block
    for launch in _launches(tree.module):
        if _dotted(launch.func.value) != kernel:  # type: ignore[attr-defined]
            continue
        for arg in launch.args:
            if arg.keyword is not None and arg.keyword.value == block:
                return tree.code(arg.value)
    return None


def _grid_node(tree: Tree, launch: cst.Call) -> cst.BaseExpression | None:
    """The grid expression written in the launch, or the value of the name the launch uses."""
    grid = launch.func.slice[0].slice  # type: ignore[attr-defined]
    expr = grid.value if isinstance(grid, cst.Index) else None
    if isinstance(expr, cst.Name):
        for targets, value in _assignments(tree.module):
            if expr.value in targets:
                expr = value
    return expr if isinstance(expr, cst.Tuple | cst.Lambda) else None


_ALLOCATORS = ("torch.empty", "torch.zeros", "torch.empty_like", "torch.zeros_like", "torch.ones_like")


def _allocated_output(tree: Tree, launch: cst.Call) -> str | None:
    """A tensor the wrapper allocates with torch and hands to this launch."""
    allocated = {
        name
        for targets, value in _assignments(tree.module)
        if isinstance(value, cst.Call) and _dotted(value.func) in _ALLOCATORS
        for name in targets
    }
    for arg in launch.args:
        if isinstance(arg.value, cst.Name) and arg.value.value in allocated:
            return arg.value.value
    return None


@rule(
    "scalar_program_stride",
    title="a kernel that handles one element per program indexes it by the program id",
    bug_class="grid_coverage",
    symptoms=("periodic", "untouched_region", "zero_region", "garbage_region", "everywhere"),
    per="module",
)
def scalar_program_stride(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """A kernel with no `tl.arange` loads and stores one element per program, so an index `pid * BLOCK`
    skips the BLOCK - 1 elements after each one (CUDA's `blockIdx * blockDim + threadIdx` without the
    thread index). The index becomes the program id, and each launch's grid, the cdiv of the element count
    by the block, becomes the element count. Both change together: either alone writes no more elements.
    """
    for kernel in _kernels(tree.module):
        if _calls(kernel.body, "tl.arange"):
            continue
        pids = _program_id_names(kernel)
        blocks = _constexpr_params(kernel)
        for product in findall(kernel.body, m.BinaryOperation(operator=m.Multiply())):
            assert isinstance(product, cst.BinaryOperation)
            sides = [_render(product.left).strip(), _render(product.right).strip()]
            pid = [s for s in sides if s in pids or s.startswith("tl.program_id(")]
            if len(pid) != 1 or not set(sides) & blocks:
                continue
            first = Tree(tree.replace(product, _expr(pid[0])).code)
            for launch in _launches(first.module):
                if _dotted(launch.func.value) != kernel.name.value:  # type: ignore[attr-defined]
                    continue
                grid = _first_grid_axis(first, launch)
                cdiv = _calls(grid, "triton.cdiv", "cdiv") if grid is not None else []
                if not cdiv or not cdiv[0].args:
                    continue
                count = _render(cdiv[0].args[0].value).strip()
                new = first.replace(cdiv[0], _expr(count))
                what = f"{kernel.name.value}: one element per program, index {pid[0]} and a grid of {count}"
                yield Edit(new, tree.line(product), what)


def _first_grid_axis(tree: Tree, launch: cst.Call) -> cst.BaseExpression | None:
    """The launch grid's first axis as written, or the value of the name it uses."""
    elements = launch.func.slice  # type: ignore[attr-defined]
    first = elements[0].slice.value if isinstance(elements[0].slice, cst.Index) else None
    if isinstance(first, cst.Name):
        values = [v for targets, v in _assignments(tree.module) if first.value in targets]
        first = values[-1] if values else first
    return first
