"""Crash rules for the wrapper's call of the generation's entry function (the reference's function name and
arguments, the generation's own signature):

- `entry_arguments`: the call passes arguments the entry's signature does not take, or binds them to the
  wrong parameters: they go by the reference's parameter names, and a required parameter the wrapper cannot
  give gets the reference's default for the same name, a size of the first tensor, a block size, or an
  output the wrapper allocates (destination-passing style);
- `entry_class`: the generation wrote its entry as an `nn.Module` or an `autograd.Function`: the call
  builds and calls it (or `.apply`s it) with each argument where the reference's name for it goes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _dotted,
    _expr,
    _launches,
    _names,
    _params,
    _render,
    _replace_many,
    rule,
)
from kernel_medic.tools.repair.rules.crash_host import _NOT_DEFINED, _crash, _host_functions, _text
from kernel_medic.tools.repair.rules.cst_find import findall

# ---------------------------------------------------------------- the entry's arguments


_ARGUMENTS = re.compile(
    r"positional arguments? but \d+ (?:were|was) given|missing \d+ required (?:positional|keyword-only) "
    r"argument|unexpected keyword argument|multiple values for argument"
)


def _reference_signature(reference: str, name: str) -> tuple[list[str], dict[str, str]] | None:
    """Parameter names (in order) and defaults (source text) of the reference's module-level function `name`.

    When the reference has no `name` (the entry was renamed to the generation's own), the one function the
    reference's `forward` calls stands in: it is what the wrapper's arguments were written for."""
    try:
        tree = ast.parse(reference)
    except (SyntaxError, ValueError):
        return None
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    fn = functions.get(name)
    if fn is None:
        called = {
            c.func.id
            for cls in tree.body
            if isinstance(cls, ast.ClassDef)
            for f in cls.body
            if isinstance(f, ast.FunctionDef) and f.name == "forward"
            for c in ast.walk(f)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in functions
        }
        if len(called) != 1:
            return None
        fn = functions[called.pop()]
    args = fn.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    positional = [*args.posonlyargs, *args.args]
    with_default = positional[len(positional) - len(args.defaults) :]
    defaults = {a.arg: ast.unparse(d) for a, d in zip(with_default, args.defaults, strict=True)}
    defaults |= {a.arg: ast.unparse(d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    return names, defaults


def _block_guesses(first: str) -> list[str]:
    return ["1024", f"triton.next_power_of_2({first}.shape[-1])"]


_BLOCK = re.compile(r"block|blk|tile", re.I)
# A parameter the caller was to allocate (destination-passing style) or a size it was to compute: the
# reference's entry allocates and measures for itself, so the wrapper's call has neither.
_OUTPUT = re.compile(r"^(out|output|outputs|result|res|dst|dest|y|c|o)(_ptr|_tensor|_matrix|put)?$", re.I)
_SIZES = (
    (re.compile(r"^(n_?elements|numel|n_elem|total_elements|num_elements|size)$", re.I), "{t}.numel()"),
    (re.compile(r"^(n_?rows|num_rows|rows|M)$"), "{t}.numel() // {t}.shape[-1]"),
    (re.compile(r"^(n_?cols|num_cols|cols|n_size|hidden_size|hidden_dim|d_model|N)$", re.I), "{t}.shape[-1]"),
    (re.compile(r"^dtype$"), "{t}.dtype"),
    (re.compile(r"^device$"), "{t}.device"),
)


def _is_size(name: str) -> bool:
    return any(pattern.match(name) for pattern, _ in _SIZES)


def _size_of(name: str, first: str) -> str | None:
    for pattern, spelling in _SIZES:
        if pattern.match(name):
            return spelling.format(t=first)
    return None


def _returns_value(fn: cst.FunctionDef) -> bool:
    """Whether `fn` itself (not a nested function) returns something."""
    found = False

    class _Visitor(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Return(self, node: cst.Return) -> None:
            nonlocal found
            found = found or node.value is not None

    fn.visit(_Visitor())
    return found


def _misaligned(ref_names: list[str], positional: list[str], call: cst.Call) -> bool:
    """A positional argument lands on a parameter the reference puts elsewhere (`eps` given where the
    generation takes `N_SIZE`): the call binds values to the wrong names even when nothing raises a TypeError
    about it."""
    for i, a in enumerate(call.args):
        if a.keyword is not None or i >= len(ref_names) or i >= len(positional):
            continue
        if ref_names[i] != positional[i] and ref_names[i] in positional:
            return True
    return False


@rule(
    "entry_arguments",
    title="the wrapper calls the generation's entry function with arguments its signature does not take",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "runtime_error", "type_mismatch", "other"),
    per="forward",
)
def entry_arguments(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """Arguments go by the reference's parameter names: one the generation's function also names is passed
    as that keyword, the rest fill its unnamed positional parameters in order, and what is left is dropped
    (a mode the generation never took: the judge decides whether it mattered). A required parameter the
    wrapper cannot give gets the reference's default for the same name, else by what its name says: a block
    size (1024, or the next power of 2 of the last dimension), a size of the first tensor (`n_elements`,
    `n_rows`, `n_cols`), or an output the caller was to allocate (`torch.empty_like` of the first tensor,
    returned by the wrapper when the generation's function returns nothing)."""
    crash = _crash(context)
    if not crash or context is None:
        return
    by_text = bool(_ARGUMENTS.search(_text(crash)))
    defined = {f.name.value: f for f in _host_functions(tree.module)}
    for call in findall(fn.body, m.Call(func=m.Name())):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
        target = defined.get(call.func.value)
        signature = _reference_signature(context.reference_source, call.func.value)
        if target is None or signature is None or any(a.star for a in call.args):
            continue
        ref_names, ref_defaults = signature
        params = target.params
        if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
            continue  # *args / **kwargs take anything
        positional = [p.name.value for p in (*params.posonly_params, *params.params)]
        keyword_only = [p.name.value for p in params.kwonly_params]
        if not by_text and not _misaligned(ref_names, positional, call):
            continue
        required = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                    if p.default is None]
        given: list[tuple[str | None, cst.BaseExpression]] = []
        for i, a in enumerate(call.args):
            by_position = ref_names[i] if i < len(ref_names) else None
            given.append((a.keyword.value if a.keyword is not None else by_position, a.value))
        named = {n: v for n, v in given if n is not None and n in (*positional, *keyword_only)}
        rest = [v for n, v in given if n is None or n not in named]
        bound: dict[str, str] = {n: _render(v) for n, v in named.items()}
        for p in positional:
            if p not in bound and rest and not _OUTPUT.match(p) and not _is_size(p):
                bound[p] = _render(rest.pop(0))
        for p in positional:  # what is left goes where the generation still has room
            if p not in bound and rest:
                bound[p] = _render(rest.pop(0))
        missing = [p for p in required if p not in bound]
        tensors = [bound[p] for p in positional if p in bound and not _OUTPUT.match(p)]
        first = tensors[0] if tensors else None
        fill: dict[str, str] = {p: ref_defaults[p] for p in missing if p in ref_defaults}
        like = f"torch.empty_like({first})"
        if {"M", "N", "K"} <= set(missing) and len(tensors) > 1:
            # A matmul's sizes and output: (M, K) @ (K, N) -> (M, N).
            a, b = tensors[0], tensors[1]
            fill |= {"M": f"{a}.shape[0]", "K": f"{a}.shape[1]", "N": f"{b}.shape[1]"}
            like = f"{a}.new_empty(({a}.shape[0], {b}.shape[1]))"
        outputs = [p for p in missing if p not in fill and _OUTPUT.match(p)]
        blocks = [p for p in missing if p not in fill and p not in outputs and _BLOCK.search(p)]
        for p in missing:
            if p not in fill and p not in outputs and p not in blocks and first is not None:
                size = _size_of(p, first)
                if size is not None:
                    fill[p] = size
        if any(p not in fill and p not in outputs and p not in blocks for p in missing):
            continue
        if (outputs or blocks) and first is None:
            continue
        allocated = "out" if "out" not in _names(fn.body) else "out_"
        alloc_out = bool(outputs) and not _returns_value(target)
        for p in outputs:
            fill[p] = allocated if alloc_out else like
        fills = [fill]
        if blocks and first is not None:
            fills = [fill | dict.fromkeys(blocks, guess) for guess in _block_guesses(first)]
        for values_fill in fills:
            values = {**bound, **values_fill}
            parts, by_name = [], False
            for p in (*positional, *keyword_only):
                if p not in values:
                    by_name = True  # a parameter left to its default: the ones after it go by name
                    continue
                by_name = by_name or p in keyword_only
                parts.append(f"{p}={values[p]}" if by_name else values[p])
            new = _expr(f"{call.func.value}({', '.join(parts)})")
            if _render(new) == _render(call):
                continue
            what = f"call {call.func.value} with the arguments its signature takes"
            what += f" ({len(given) - len(bound)} dropped)" if len(given) > len(bound) else ""
            what += "".join(f", {k}={v}" for k, v in values_fill.items())
            statement = _statement_of(tree, call)
            if not alloc_out:
                yield tree.edit(call, new, what)
                continue
            if statement is None or not m.matches(statement.body[0], m.Return(value=m.Call())):
                continue
            # The generation's function fills the output it is given and returns nothing: the wrapper
            # allocates it, passes it, and returns it.
            lines = [f"{allocated} = {like}", _render(new), f"return {allocated}"]
            replacement = cst.FlattenSentinel([cst.parse_statement(line + "\n") for line in lines])
            yield Edit(
                _replace_many(tree.module, {statement: replacement}),  # type: ignore[dict-item]
                tree.line(call),
                what + f"; the wrapper allocates {allocated} and returns it",
            )


def _statement_of(tree: Tree, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    parent = tree.parent(node)
    while parent is not None and not isinstance(parent, cst.SimpleStatementLine):
        parent = tree.parent(parent)
    return parent


# ---------------------------------------------------------------- an entry written as a class


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _bind(
    ref_args: list[tuple[str | None, str]], groups: list[list[cst.Param]]
) -> list[dict[str, str]] | None:
    """Arguments (reference name or None, source) bound to parameter groups (ctor, forward): by name first,
    then the rest in order into each group's positional parameters; None when a required one stays unbound."""
    bound: list[dict[str, str]] = [{} for _ in groups]
    rest: list[str] = []
    for name, value in ref_args:
        slot = next((i for i, g in enumerate(groups) if name in {p.name.value for p in g}), None)
        if slot is None or name is None:
            rest.append(value)
        else:
            bound[slot][name] = value
    for i in reversed(range(len(groups))):  # leftovers feed the last group (forward / apply) first
        for p in groups[i]:
            if p.name.value not in bound[i] and rest and p.default is None:
                bound[i][p.name.value] = rest.pop(0)
    for g, b in zip(groups, bound, strict=True):
        if any(p.default is None and p.name.value not in b for p in g):
            return None
    return bound


@rule(
    "entry_class",
    title="the generation wrote its entry as an nn.Module or autograd.Function, not the reference's function",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "import_error", "runtime_error"),
    per="forward",
)
def entry_class(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`rmsnorm_forward(x, w, eps)` is not defined, and the one class of the file that launches a kernel is
    `TritonRMSNorm(weight, eps)` with `forward(x)`: the call becomes `TritonRMSNorm(weight=w, eps=eps)(x)`
    (an `autograd.Function`: `Cls.apply(...)`), each argument going where the reference's name for it goes."""
    crash = _crash(context)
    missing = _NOT_DEFINED.search(str(crash.get("message", "")))
    if not missing or context is None:
        return
    name = missing.group(1)
    if name in {f.name.value for f in findall(tree.module, m.FunctionDef())}:
        return
    classes = [
        s
        for s in tree.module.body
        if isinstance(s, cst.ClassDef) and s.name.value != "ModelNew" and _launches(s)
    ]
    signature = _reference_signature(context.reference_source, name)
    if len(classes) != 1 or signature is None:
        return
    cls = classes[0]
    ref_names = signature[0]
    autograd = any("Function" in (_dotted(b.value) or "") for b in cls.bases)
    for call in findall(fn.body, m.Call(func=m.Name(name))):
        assert isinstance(call, cst.Call)
        if any(a.star for a in call.args):
            continue
        ref_args: list[tuple[str | None, str]] = []
        for i, a in enumerate(call.args):
            by_position = ref_names[i] if i < len(ref_names) else None
            ref_args.append((a.keyword.value if a.keyword else by_position, _render(a.value)))
        forward = _method(cls, "forward")
        if forward is None:
            continue
        if autograd:
            bound = _bind(ref_args, [list(_params(forward))[1:]])
            if bound is None:
                continue
            values = [bound[0][p.name.value] for p in list(_params(forward))[1:] if p.name.value in bound[0]]
            new = f"{cls.name.value}.apply({', '.join(values)})"
        else:
            init = _method(cls, "__init__")
            ctor = list(_params(init))[1:] if init is not None else []
            bound = _bind(ref_args, [ctor, list(_params(forward))[1:]])
            if bound is None:
                continue
            made = ", ".join(f"{k}={v}" for k, v in bound[0].items())
            used = ", ".join(f"{k}={v}" for k, v in bound[1].items())
            new = f"{cls.name.value}({made})({used})"
        yield tree.edit(call, _expr(new), f"call the generation's {cls.name.value} in place of {name}")
