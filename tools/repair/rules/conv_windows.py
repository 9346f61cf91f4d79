"""Conv/pool windows in the kernel: input coordinates, padding bounds and valid-tap counts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

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
    _expr,
    _is_number,
    _mask_names,
    _names,
    _params,
    _render,
    _values_of,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.compose import _edit
from kernel_medic.tools.repair.rules.conv_spec import (
    _apply,
    _atom,
    _dim_letter,
    _fresh,
    _launch_args,
    _pick,
    _reference_spec,
    _role,
    _Spec,
    _statement,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- kernel-side geometry


@dataclass
class _KernelParams:
    """A kernel's geometry parameters by role; memory strides are left out."""

    by_role: dict[str, list[str]]
    used: set[str]  # names read anywhere in the body

    def of(self, role: str, target: str) -> str | None:
        return _pick(self.by_role.get(role, []), target)


def _kernel_params(module: cst.Module, fn: cst.FunctionDef) -> _KernelParams:
    launched = _launch_args(module, fn)
    constexpr = _constexpr_params(fn)
    by_role: dict[str, list[str]] = {}
    for p in _params(fn):
        name = p.name.value
        low = name.lower()
        if "ptr" in low or "block" in low:
            continue
        role = _role(name)
        if role == "h" and name in launched:
            role = _role(launched[name])  # `D` launched with `dilation` is the dilation
        if role == "s":
            memory = "stride(" in launched.get(name, "") or (
                name not in constexpr and re.fullmatch(r"(stride_?\w+|\w+_stride)", low) is not None
            )
            if memory and not name.isupper():
                continue
        if role != "h":
            by_role.setdefault(role, []).append(name)
    used: set[str] = set()
    for stmt in fn.body.body:
        used |= _names(stmt)
    return _KernelParams(by_role, used)


@dataclass
class _Term:
    sign: str  # "+" or "-"
    node: cst.BaseExpression
    kind: str  # plain, s, d, k (a product with that parameter), p (the padding alone), other
    factor: cst.BaseExpression | None = None  # the other operand of a product


def _chain(expr: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """Signed terms of an unparenthesised + / - chain."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add | cst.Subtract):
        if not expr.lpar:
            sign = "+" if isinstance(expr.operator, cst.Add) else "-"
            return [*_chain(expr.left), (sign, expr.right)]
    return [("+", expr)]


def _is_plain(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Name):
        return True
    return isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)


def _terms(expr: cst.BaseExpression, roles: dict[str, str]) -> list[_Term]:
    out: list[_Term] = []
    for sign, node in _chain(expr):
        kind, factor = "other", None
        if _is_plain(node):
            kind = "plain"
            if isinstance(node, cst.Name) and roles.get(node.value) == "p":
                kind = "p"
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            for param, other in ((node.right, node.left), (node.left, node.right)):
                if isinstance(param, cst.Name) and roles.get(param.value) in ("s", "d", "k"):
                    kind, factor = roles[param.value], other
                    break
        out.append(_Term(sign if out else "", node, kind, factor))
    return out


def _join(terms: list[tuple[str, str]]) -> str:
    text = ""
    for i, (sign, code) in enumerate(terms):
        text += code if i == 0 and sign in ("", "+") else f" {sign or '+'} {code}" if i else f"-{code}"
    return text


@dataclass
class _Coord:
    stmt: cst.Assign
    target: str
    terms: list[_Term]
    inherited: set[str]  # kinds of a window start it adds a tap to (`li = l0 + k`, l0 = lo * S - P)


def _coordinates(fn: cst.FunctionDef, params: _KernelParams) -> list[_Coord]:
    """Assignments that compute an input coordinate from an output position and a tap."""
    roles = {name: role for role, names in params.by_role.items() for name in names}
    compared = {
        n
        for cmp in findall(fn.body, m.Comparison())
        if isinstance(cmp, cst.Comparison)
        for n in _names(cmp)
    }
    values = _values_of(fn)
    out: list[_Coord] = []
    for stmt in findall(fn.body, m.Assign()):
        assert isinstance(stmt, cst.Assign)
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0].target, cst.Name):
            continue
        target = stmt.targets[0].target.value
        terms = _terms(stmt.value, roles)
        kinds = [t.kind for t in terms]
        inherited = {
            t2.kind
            for t in terms
            if t.kind == "plain" and isinstance(t.node, cst.Name) and len(values.get(t.node.value, [])) == 1
            for t2 in _terms(values[t.node.value][0], roles)
        } & {"s", "d", "p"}
        if len(terms) < 2 or not (set(kinds) | inherited) & {"s", "d", "k", "p"}:
            continue
        if "k" in kinds and not any(
            t.kind == "k" and t.factor is not None and _is_plain(t.factor) for t in terms
        ):
            continue
        if not ((set(kinds) | inherited) & {"p", "d"} or target in compared):
            continue
        out.append(_Coord(stmt, target, terms, inherited))
    return out


def _coord_fixes(coord: _Coord, params: _KernelParams, siblings: list[_Coord]) -> list[tuple[str, int, str]]:
    """(fix kind, plain-term ordinal, new right-hand side) for one coordinate assignment."""
    kinds = [t.kind for t in coord.terms] + sorted(coord.inherited)
    others = [c for c in siblings if c is not coord]

    def missing(role: str) -> str | None:
        """The parameter of `role` this coordinate should use but does not."""
        name = params.of(role, coord.target)
        if name is None or role in kinds:
            return None
        if name not in params.used or any(role in [t.kind for t in c.terms] for c in others):
            return name
        return None

    rendered = [(t.sign, _render(t.node)) for t in coord.terms]
    plain = [i for i, t in enumerate(coord.terms) if t.kind == "plain"]
    fixes: list[tuple[str, int, str]] = []
    pad = missing("p")
    if pad is not None:
        at = kinds.index("s") + 1 if "s" in kinds else 1
        fixes.append(("pad", 0, _join([*rendered[:at], ("-", pad), *rendered[at:]])))
    dil = missing("d")
    if dil is not None:
        taps = [i for i in plain if "s" in kinds or "k" in kinds] or plain
        for ordinal, i in enumerate(taps):
            new = list(rendered)
            new[i] = (rendered[i][0], f"{rendered[i][1]} * {dil}")
            fixes.append(("dilation", ordinal, _join(new)))
    stride = missing("s")
    if stride is not None:
        for i, t in enumerate(coord.terms):
            if t.kind == "k" and t.factor is not None and _is_plain(t.factor):
                new = list(rendered)
                new[i] = (rendered[i][0], f"{_render(t.factor)} * {stride}")
                fixes.append(("window_step", 0, _join(new)))
        if "k" not in kinds:
            starts = [i for i in plain if "d" in kinds] or plain
            for ordinal, i in enumerate(starts):
                new = list(rendered)
                new[i] = (rendered[i][0], f"{rendered[i][1]} * {stride}")
                fixes.append(("stride", ordinal, _join(new)))
    for i, t in enumerate(coord.terms):
        if t.kind == "p" and t.sign in ("+", "") and i > 0 and set(kinds) & {"s", "d"}:
            new = list(rendered)
            new[i] = ("-", rendered[i][1])
            fixes.append(("pad_sign", 0, _join(new)))
    return fixes


@rule(
    "conv_input_coords",
    title="input coordinate out * stride - padding + tap * dilation, all axes at once",
    bug_class="operator_misread",
    symptoms=("everywhere", "shifted", "periodic", "leading", "trailing", "scattered"),
    guarded=True,
)
def conv_input_coords(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Input coordinate = out * STRIDE - PAD + tap * DIL, on every twin (ih, iw) at once."""
    params = _kernel_params(tree.module, fn)
    coords = _coordinates(fn, params)
    groups: dict[tuple[str, ...], list[_Coord]] = {}
    for c in coords:
        groups.setdefault(tuple(sorted(t.kind for t in c.terms)), []).append(c)
    for group in groups.values():
        options: dict[tuple[str, int], dict[cst.CSTNode, cst.CSTNode]] = {}
        for c in group:
            for kind, ordinal, rhs in _coord_fixes(c, params, coords):
                options.setdefault((kind, ordinal), {})[c.stmt.value] = _expr(rhs)
        for (kind, _), mapping in options.items():
            first = min(mapping, key=tree.line)
            lines = "; ".join(_render(v) for v in mapping.values())
            what = f"{fn.name.value}: input coordinate ({kind}) {lines}"
            yield Edit(_apply(tree, mapping), tree.line(first), what)


# ---------------------------------------------------------------- pad_upper_bound


def _bounds(expr: cst.CSTNode) -> tuple[dict[str, cst.Comparison], dict[str, cst.Comparison]]:
    """Names with a `x >= 0` lower bound and names with an `x < n` upper bound in a mask."""
    lower: dict[str, cst.Comparison] = {}
    upper: dict[str, cst.Comparison] = {}
    for cmp in findall(expr, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        if len(cmp.comparisons) != 1:
            continue
        op, right, left = cmp.comparisons[0].operator, cmp.comparisons[0].comparator, cmp.left
        if isinstance(left, cst.Name):
            if isinstance(op, cst.GreaterThanEqual) and _is_number(right, 0):
                lower[left.value] = cmp
            elif isinstance(op, cst.GreaterThan) and _is_number(right, -1):
                lower[left.value] = cmp
            elif isinstance(op, cst.LessThan | cst.LessThanEqual):
                upper[left.value] = cmp
        if isinstance(right, cst.Name) and isinstance(op, cst.LessThanEqual) and _is_number(left, 0):
            lower[right.value] = cmp
    return lower, upper


def _and(tree: Tree, cmp: cst.Comparison, extra: str) -> cst.BaseExpression:
    parent = tree.parent(cmp)
    text = f"{_render(cmp)} & ({extra})" if cmp.lpar else f"({_render(cmp)}) & ({extra})"
    inline = isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.BitAnd)
    return _expr(text if inline or isinstance(parent, cst.Assign | cst.Arg) else f"({text})")


@rule(
    "pad_upper_bound",
    title="padding mask bounds the input coordinate on the right/bottom too",
    bug_class="tail_mask",
    symptoms=("trailing", "tail_block", "columns", "rows", "scattered", "garbage_region"),
    guarded=True,
)
def pad_upper_bound(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A padding mask bounds the coordinate on both sides: `x >= 0` needs its `x < size`."""
    constexpr = _constexpr_params(fn)
    sizes = [
        p.name.value
        for p in _params(fn)
        if p.name.value not in constexpr
        and not re.search(r"ptr|stride|^s[a-z]{2,3}$", p.name.value.lower())
        and p.annotation is None
    ]
    pointers = set()
    for access in _calls(fn.body, "tl.load", "tl.store"):
        address = _arg(access, "pointer", 0)
        if address is not None:
            pointers |= {_render(n) for _, n in _chain(address.value) if isinstance(n, cst.Name)}
    sizes = [s for s in sizes if s not in pointers]
    compared: list[str] = []
    for cmp in findall(fn.body, m.Comparison()):
        assert isinstance(cmp, cst.Comparison)
        for target in cmp.comparisons:
            if isinstance(target.comparator, cst.Name) and target.comparator.value in sizes:
                if target.comparator.value not in compared:
                    compared.append(target.comparator.value)
    mask_names = set(_mask_names(fn))
    masks = [
        v
        for targets, v in _assignments(fn.body)
        if targets & mask_names or any("mask" in t.lower() for t in targets)
    ]
    for call in _calls(fn.body, "tl.load"):
        arg = _arg(call, "mask", 1)
        if arg is not None and not isinstance(arg.value, cst.Name):
            masks.append(arg.value)
    for mask in masks:
        lower, upper = _bounds(mask)
        todo = [name for name in lower if name not in upper]
        if not todo:
            continue
        ranked: dict[str, list[str]] = {}
        for name in todo:
            letter = _dim_letter(name)
            same = [s for s in compared + sizes if letter and _dim_letter(s) == letter]
            order = list(dict.fromkeys(same + compared + sizes))
            # an input coordinate is bounded by an input size, not an output one
            order.sort(
                key=lambda s: (
                    "out" in s.lower() or re.fullmatch(r"O[A-Z]\w*", s) is not None,
                    re.fullmatch(r"(c|n_?c|num_c|ch)(h|hannels?)?(_\w+)?", s.lower()) is not None,
                )
            )
            ranked[name] = order[:3]
        choices = [{name: ranked[name][0] for name in todo if ranked[name]}]
        for name in todo:
            choices += [{name: size} for size in ranked[name]]
        seen: set[str] = set()
        for choice in choices:
            if not choice:
                continue
            mapping: dict[cst.CSTNode, cst.CSTNode] = {
                lower[name]: _and(tree, lower[name], f"{name} < {size}") for name, size in choice.items()
            }
            new = _apply(tree, mapping)
            if new.code in seen:
                continue
            seen.add(new.code)
            bounds = ", ".join(f"{n} < {s}" for n, s in choice.items())
            yield Edit(new, tree.line(mask), f"{fn.name.value}: padding mask gets its upper bound {bounds}")


# ---------------------------------------------------------------- avg_pool_valid_count


def _window_area(expr: cst.BaseExpression, kernel_sizes: set[str]) -> bool:
    """A product of kernel-size parameters and integers (the window area)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _window_area(expr.left, kernel_sizes) and _window_area(expr.right, kernel_sizes)
    if isinstance(expr, cst.Name):
        return expr.value in kernel_sizes
    return isinstance(expr, cst.Integer)


def _divides_by_taps_inside(spec: _Spec) -> bool:
    if spec.get("count_include_pad") is False:
        return True
    padding = spec.values.get("padding")
    unpadded = padding in (0, None) or (isinstance(padding, tuple | list) and not any(padding))
    return spec.get("ceil_mode") is True and unpadded


@rule(
    "avg_pool_valid_count",
    title="count_include_pad=False: average over the taps inside the input",
    bug_class="operator_misread",
    symptoms=("leading", "trailing", "constant_ratio", "rows", "columns", "periodic"),
    guarded=True,
)
def avg_pool_valid_count(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """count_include_pad=False: divide each window sum by its taps inside the input, not the window area.

    So does ceil_mode=True without padding: torch clips the last window to the input and divides by what is
    left of it, which is exactly the taps inside the input."""
    spec = _reference_spec(context)
    if spec is not None and (spec.kind != "avg" or not _divides_by_taps_inside(spec)):
        return
    kernel_sizes = {p.name.value for p in _params(fn) if _role(p.name.value) == "k"}
    inits: dict[str, cst.Assign] = {}
    accumulates: dict[str, list[cst.AugAssign]] = {}
    loads: dict[str, cst.Call] = {}
    for node in findall(fn.body, m.Assign() | m.AugAssign()):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
        ):
            name = node.targets[0].target.value
            inits.setdefault(name, node)
            found = _calls(node.value, "tl.load")
            if found:
                loads[name] = found[0]
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            accumulates.setdefault(node.target.value, []).append(node)
    for div in findall(fn.body, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        divisor = div.right.with_changes(lpar=[], rpar=[])
        # With the reference saying count_include_pad=False, any divisor but a count of the taps is wrong
        # (a window clipped to the padded extent); without it, only the plain window area is suspect.
        told = spec is not None and spec.get("count_include_pad") is False
        if isinstance(divisor, cst.Integer) or not (told or _window_area(divisor, kernel_sizes)):
            continue
        numerator = div.left
        replace: dict[cst.CSTNode, cst.CSTNode] = {}
        after: dict[cst.CSTNode, list[str]] = {}
        if isinstance(numerator, cst.Name) and numerator.value in accumulates:
            acc = numerator.value
            init = inits.get(acc)
            steps = accumulates[acc]
            load = next(iter(_calls(steps[0].value, "tl.load")), None)
            if load is None:  # `acc += v` or `acc += v.to(tl.float32)`: the load that made v
                load = next((loads[n] for n in sorted(_names(steps[0].value)) if n in loads), None)
            mask = _arg(load, "mask", 1) if load is not None else None
            if init is None or mask is None:
                continue
            count = _fresh(fn, "count")
            after[_statement(tree, init) or init] = [f"{count} = {_render(init.value)}"]
            after[_statement(tree, steps[0]) or steps[0]] = [
                f"{count} += {_atom(_render(mask.value))}.to(tl.float32)"
            ]
            replace[div.right] = _expr(f"tl.maximum({count}, 1.0)")
        else:
            total = numerator
            if isinstance(numerator, cst.Name) and numerator.value in inits:
                total = inits[numerator.value].value
            sums = _calls(total, "tl.sum")
            if not sums:
                continue
            summed = _arg(sums[0], "input", 0)
            axis = _arg(sums[0], "axis", 1)
            if summed is None or not isinstance(summed.value, cst.Name) or summed.value.value not in loads:
                continue
            mask = _arg(loads[summed.value.value], "mask", 1)
            if mask is None:
                continue
            axis_text = f", axis={_render(axis.value)}" if axis is not None else ""
            counted = f"tl.sum({_atom(_render(mask.value))}.to(tl.float32){axis_text})"
            replace[div.right] = _expr(f"tl.maximum({counted}, 1.0)")
        ceil = spec is not None and spec.get("count_include_pad") is not False
        why = "ceil_mode clips the last window" if ceil else "count_include_pad=False"
        what = f"{fn.name.value}: average over the taps inside the input ({why})"
        yield Edit(_apply(tree, replace, after), tree.line(div), what)


# ---------------------------------------------------------------- padding_mode, ceil_window_divisor


def _bounded(fn: cst.FunctionDef) -> dict[str, str]:
    """Names a kernel bounds by 0 below and by a size above (`(ih >= 0) & (ih < H)`): name -> size."""
    lower: set[str] = set()
    upper: dict[str, str] = {}
    for comp in findall(fn.body, m.Comparison(left=m.Name())):
        assert isinstance(comp, cst.Comparison) and isinstance(comp.left, cst.Name)
        for target in comp.comparisons:
            if isinstance(target.operator, cst.GreaterThanEqual) and _is_number(target.comparator, 0):
                lower.add(comp.left.value)
            elif isinstance(target.operator, cst.LessThan):
                upper.setdefault(comp.left.value, _render(target.comparator))
    return {name: upper[name] for name in lower & set(upper)}


_PADDING_MODE = re.compile(r"padding_mode\s*=\s*['\"](circular|reflect|replicate)['\"]")


def _into_range(value: str, n: str, mode: str) -> str:
    if mode == "circular":
        return f"(({value}) % {n} + {n}) % {n}"
    if mode == "reflect":
        mirrored = f"tl.where(({value}) >= {n}, 2 * ({n} - 1) - ({value}), {value})"
        return f"tl.where(({value}) < 0, -({value}), {mirrored})"
    return f"tl.minimum(tl.maximum({value}, 0), {n} - 1)"


@rule(
    "padding_mode",
    title="input coordinates wrap, mirror or clamp as the reference's padding_mode",
    bug_class="operator_misread",
    symptoms=("leading", "trailing", "columns", "rows", "everywhere", "periodic"),
)
def padding_mode(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """A convolution built with padding_mode='circular', 'reflect' or 'replicate' reads real input past
    the edges where a kernel that zero-pads reads nothing: each input coordinate the kernel bounds by 0
    and an upper size (`(pos >= 0) & (pos < L)`) is wrapped, mirrored or clamped into range instead;
    every such coordinate at once, then each alone."""
    found = _PADDING_MODE.search(context.reference_source) if context is not None else None
    if found is None:
        return
    sites: list[tuple[cst.Assign, str]] = []
    for name, size in sorted(_bounded(fn).items()):
        assigns = [
            a
            for a in findall(fn.body, m.Assign(targets=[m.AssignTarget(target=m.Name(name))]))
            if isinstance(a, cst.Assign)
        ]
        if len(assigns) == 1:
            value = _render(assigns[0].value.with_changes(lpar=[], rpar=[]))
            sites.append((assigns[0], _into_range(value, size, found.group(1))))
    what = f"{fn.name.value}: {found.group(1)} padding: input coordinates"
    if len(sites) > 1:
        new = _edit(tree, {a.value: (lambda _, code=code: _expr(code)) for a, code in sites})
        yield Edit(
            new,
            tree.line(sites[0][0]),
            f"{what} brought into range",
            tuple(tree.line(a) for a, _ in sites[1:]),
        )
    for assign, code in sites:
        yield tree.edit(
            assign.value, _expr(code), f"{what} {_render(assign.targets[0].target)} brought into range"
        )


_CEIL_AVG_POOL = re.compile(r"(AvgPool[123]d|avg_pool[123]d)\([^)]*ceil_mode\s*=\s*True")


@rule(
    "ceil_window_divisor",
    title="a ceil-mode average pool divides each window by its part within the padded input",
    bug_class="operator_misread",
    symptoms=("trailing", "rows", "columns", "constant_ratio", "shape"),
)
def ceil_window_divisor(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """With ceil_mode=True the last window may run past the padded input, and PyTorch divides it by the
    part inside the input and its padding, `min(start + K, size + pad) - start` per axis, not by the
    whole kernel area. Each input coordinate `start + k` (k over the kernel) the kernel bounds by 0 and
    a size gives one axis; the window start's `- pad` gives the padding."""
    source = context.reference_source if context is not None else ""
    if not _CEIL_AVG_POOL.search(source) or re.search(r"count_include_pad\s*=\s*False", source):
        return
    loops = {f.target.value: f for f in findall(fn.body, m.For(target=m.Name())) if isinstance(f, cst.For)}
    values: dict[str, list[cst.BaseExpression]] = {}
    for targets, value in _assignments(fn.body):
        for t in targets:
            values.setdefault(t, []).append(value)
    axes: list[tuple[str, str]] = []  # (window size expression, the kernel size it replaces)
    for name, size in sorted(_bounded(fn).items()):
        assigned = values.get(name, [])
        value = assigned[0] if len(assigned) == 1 else None
        if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add)):
            continue
        k, start = (
            (value.right, value.left) if isinstance(value.right, cst.Name) else (value.left, value.right)
        )
        loop = loops.get(k.value) if isinstance(k, cst.Name) else None
        if loop is None or not isinstance(loop.iter, cst.Call) or not loop.iter.args:
            continue
        extent = _render(loop.iter.args[-1].value if len(loop.iter.args) <= 2 else loop.iter.args[1].value)
        origin = values.get(start.value, []) if isinstance(start, cst.Name) else [start]
        if len(origin) != 1 or not (
            isinstance(origin[0], cst.BinaryOperation) and isinstance(origin[0].operator, cst.Subtract)
        ):
            continue
        pad = _render(origin[0].right)
        begin = _render(start)
        used = [
            s for s in findall(fn.body, m.Subscript(value=m.Name(name))) if isinstance(s, cst.Subscript)
        ]
        layout = tree.code(used[0]).removeprefix(name) if used else ""
        axes.append((f"(tl.minimum({begin} + {extent}, {size} + {pad}) - {begin}){layout}", extent))
    if not axes:
        return
    extents = {e for _, e in axes}
    for div in findall(fn.body, m.BinaryOperation(operator=m.Divide())):
        assert isinstance(div, cst.BinaryOperation)
        if not _names(div.right) or not _names(div.right) <= extents or _calls(div.right, "tl.minimum"):
            continue
        divisor = " * ".join(code for code, _ in axes)
        what = f"{fn.name.value}: divide by each window's part within the padded input (ceil_mode)"
        yield tree.edit(div.right, _expr(f"({divisor})"), what)


RULES = rules_of(__name__)
