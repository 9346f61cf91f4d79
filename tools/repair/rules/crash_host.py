"""Crash rules for the host side of a generated file: TorchScript decorators, CUDA-style launch configs,
and an entry point the generation named differently.

Each acts only on a reported crash (`RuleContext.crash`):

- `drop_torch_script`: `@torch.jit.script` / `@torch.compile` on a Python wrapper that launches Triton
  kernels (TorchScript cannot compile a kernel launch) is removed;
- `launch_config`: `kernel[grid, block](...)` (CUDA's `<<<grid, block>>>`) -> `kernel[grid](...)`;
- `kernel_free_name`: a kernel reads a wrapper variable it was never passed: it becomes a constexpr
  parameter, passed at each launch;
- `entry_point`: the wrapper calls a function the generation never defined (`cholesky`) while it defines
  one whose name contains it (`linalg_cholesky`) or only one host function that launches a kernel and is
  called by no other, or calls a `@triton.jit` kernel that a host function of the file launches: the call
  goes to that function;
- `flatten_leading_dims`: a wrapper written for 2-D input (`M, K = x.shape`) given N-D input (or the
  reverse): the leading dimensions are folded into one on the way in and back on the way out;
- `tensor_attribute`: a torch.Tensor attribute that does not exist (`x.strides`) -> the closest real one;
- `broken_check`: a host assert whose own test raises (an invented method) is dropped.

The entry's arguments and an entry written as a class are `crash_entry`'s.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _assignments,
    _dotted,
    _expr,
    _kernels,
    _launches,
    _names,
    _params,
    _render,
    _replace_many,
    _with_kwarg,
    rule,
)
from kernel_medic.tools.repair.rules.cst_find import findall


def _crash(context: RuleContext | None) -> dict[str, Any]:
    return context.crash if context is not None else {}


def _text(crash: dict[str, Any]) -> str:
    return f"{crash.get('exception', '')}: {crash.get('message', '')} {crash.get('code', '')}"


# ---------------------------------------------------------------- TorchScript on a launcher

_SCRIPTING = ("torch.jit.script", "torch.jit.trace", "torch.compile", "torch.jit.script_method")


@rule(
    "drop_torch_script",
    title="a TorchScript / torch.compile decorator on a wrapper that launches Triton kernels",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "import_error", "compile_error", "runtime_error"),
    per="module",
)
def drop_torch_script(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Remove `@torch.jit.script` (and `trace`, `torch.compile`) from functions that are not kernels:
    TorchScript cannot compile a Triton launch, so it fails at import or at the first call."""
    crash = _crash(context)
    if not crash:
        return
    kernels = {k.name.value for k in _kernels(tree.module)}
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for fn in findall(tree.module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        if fn.name.value in kernels:
            continue
        kept = [
            d
            for d in fn.decorators
            if _dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
            not in _SCRIPTING
        ]
        if len(kept) != len(fn.decorators):
            mapping[fn] = fn.with_changes(decorators=kept)
    if mapping:
        first = min(tree.line(n) for n in mapping)
        yield Edit(_replace_many(tree.module, mapping), first, "no TorchScript on the Triton wrapper")


# ---------------------------------------------------------------- kernel[grid, block]

_BLOCKISH = re.compile(r"block|thread|warp|BLOCK|THREAD|WARP|Block")


def _blockish(expr: cst.BaseExpression) -> bool:
    """A CUDA block config: a name/attribute about blocks or threads, a power-of-2 literal >= 32, a tuple."""
    if isinstance(expr, cst.Tuple | cst.List):
        return True
    if isinstance(expr, cst.Integer):
        value = int(expr.value.replace("_", ""), 0)
        return value >= 32 and value & (value - 1) == 0
    return bool(_BLOCKISH.search(_render(expr)))


@rule(
    "launch_config",
    title="a kernel launched with a CUDA-style [grid, block] configuration",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "runtime_error", "compile_error"),
    per="module",
)
def launch_config(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`kernel[grid, BLOCK](...)` -> `kernel[grid](...)`: Triton's subscript is the grid alone (the block
    size is a constexpr argument); an element named `grid` is the grid wherever it stands. A grid that is a
    single number becomes a 1-tuple."""
    if not _crash(context):
        return
    for call in _launches(tree.module):
        sub = call.func
        assert isinstance(sub, cst.Subscript)
        elements = [e.slice.value for e in sub.slice if isinstance(e.slice, cst.Index)]
        if len(elements) < 2 or len(elements) != len(sub.slice):
            continue
        named = [e for e in elements if isinstance(e, cst.Name) and "grid" in e.value.lower()]
        if len(named) == 1:
            grid = named[0]
        elif all(_blockish(e) for e in elements[1:]):
            grid = elements[0]
        else:
            continue
        if isinstance(grid, cst.Tuple | cst.List | cst.Lambda | cst.Name):
            code = _render(grid)
        else:
            code = f"({_render(grid)},)"
        new_sub = sub.with_changes(slice=[cst.SubscriptElement(cst.Index(_expr(code)))])
        yield tree.edit(sub, new_sub, f"launch grid {code} without the CUDA block configuration")


# ---------------------------------------------------------------- the entry point's name

_NOT_DEFINED = re.compile(r"name '(\w+)' is not defined")


def _host_functions(module: cst.Module) -> list[cst.FunctionDef]:
    kernels = {k.name.value for k in _kernels(module)}
    return [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value not in kernels]


def _launchers_of(module: cst.Module, kernel: str) -> list[str]:
    """Host functions whose body launches `kernel[grid](...)`."""
    out = []
    for fn in _host_functions(module):
        for call in _launches(fn):
            sub = call.func
            assert isinstance(sub, cst.Subscript)
            if (_dotted(sub.value) or "").split(".")[-1] == kernel:
                out.append(fn.name.value)
                break
    return out


def _top_launchers(module: cst.Module) -> list[str]:
    """The one host function that launches a kernel and that no other host function calls (the file's
    entry point, whatever its name), or nothing when there are several."""
    launching = [h for k in _kernels(module) for h in _launchers_of(module, k.name.value)]
    called = {
        _dotted(c.func)
        for fn in _host_functions(module)
        for c in findall(fn.body, m.Call())
        if isinstance(c, cst.Call)
    }
    top = sorted({h for h in launching if h not in called})
    return top if len(top) == 1 else []


def _similar(missing: str, names: list[str]) -> list[str]:
    """Defined names that contain the missing one as whole `_` parts (`linalg_cholesky` for `cholesky`),
    then names that are whole parts of it (`tile_exp` for `fused_tile_exp`), shortest / longest first."""
    parts = missing.lower().split("_")
    wider, narrower = [], []
    for name in names:
        words = [w for w in name.lower().split("_") if w]
        if _run_of(parts, words):
            wider.append(name)
        elif len("_".join(words)) >= 4 and _run_of(words, parts):
            narrower.append(name)
    return sorted(wider, key=lambda n: (n.startswith("_"), len(n))) + sorted(
        narrower, key=lambda n: (n.startswith("_"), -len(n))
    )


def _run_of(short: list[str], long: list[str]) -> bool:
    """Whether `short` occurs as a contiguous run of `long`."""
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


@rule(
    "entry_point",
    title="the wrapper calls a function the generation named differently, or the kernel itself",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "import_error", "runtime_error"),
    per="module",
)
def entry_point(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Calls of an undefined name (`NameError` where it is called) go to the one host function whose name
    contains it as whole words; calls of a `@triton.jit` kernel from host code go to the host function
    that launches it (interpreted, the kernel would run as Python on whole tensors)."""
    crash = _crash(context)
    if not crash:
        return
    module = tree.module
    kernels = {k.name.value for k in _kernels(module)}
    hosts = [f.name.value for f in _host_functions(module)]
    missing = _NOT_DEFINED.search(str(crash.get("message", "")))
    targets: dict[str, str] = {}
    if missing and missing.group(1) not in hosts and missing.group(1) not in kernels:
        similar = _similar(missing.group(1), hosts) or _top_launchers(module)
        if similar:
            targets[missing.group(1)] = similar[0]
    for kernel in kernels:
        launchers = [h for h in _launchers_of(module, kernel) if h != kernel]
        if len(launchers) == 1:
            targets.setdefault(kernel, launchers[0])
    if not targets:
        return
    inside = {id(n) for fn in _kernels(module) for n in findall(fn, m.Call())}
    for old, new in targets.items():
        mapping: dict[cst.CSTNode, cst.CSTNode] = {}
        for call in findall(module, m.Call(func=m.Name(old))):
            assert isinstance(call, cst.Call)
            # Not inside a kernel (a device call), not inside the launcher itself (its own recursion).
            if id(call) in inside or _in_function(tree, call, new):
                continue
            mapping[call.func] = cst.Name(new)
        if mapping:
            first = min(tree.line(n) for n in mapping)
            yield Edit(
                _replace_many(module, mapping), first, f"call {new}, the generation's entry point, not {old}"
            )


# ---------------------------------------------------------------- a wrapper variable the kernel reads


def _binds(fn: cst.FunctionDef, name: str) -> bool:
    params = {p.name.value for p in _params(fn)}
    if fn.params.star_kwarg is not None:
        params.add(fn.params.star_kwarg.name.value)
    return name in params or any(name in targets for targets, _ in _assignments(fn.body))


@rule(
    "kernel_free_name",
    title="a kernel reads a variable of the wrapper that launches it, never passed",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "import_error", "runtime_error", "compile_error"),
    per="module",
)
def kernel_free_name(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`NameError: name 'mode' is not defined` in a kernel whose every launcher has a `mode` (a parameter
    or a local): the kernel gets `mode: tl.constexpr` and each launch passes `mode=mode`."""
    crash = _crash(context)
    missing = _NOT_DEFINED.search(str(crash.get("message", "")))
    if not missing:
        return
    name = missing.group(1)
    for kernel in _kernels(tree.module):
        if name in {p.name.value for p in _params(kernel)} or name not in _names(kernel.body):
            continue
        launches = [
            c
            for c in _launches(tree.module)
            if (_dotted(c.func.value) or "").split(".")[-1] == kernel.name.value  # type: ignore[attr-defined]
        ]
        sites = [(c, _function_of(tree, c)) for c in launches]
        if not sites or any(fn is None or not _binds(fn, name) for _, fn in sites):
            continue
        annotation = cst.Annotation(_expr("tl.constexpr"))
        params = kernel.params
        if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.kwonly_params:
            new_param = cst.Param(cst.Name(name), annotation, default=_expr("None"))
            params = params.with_changes(kwonly_params=[*params.kwonly_params, new_param])
        else:
            default = _expr("None") if any(p.default is not None for p in params.params) else None
            last = list(params.params)
            if last and not isinstance(last[-1].comma, cst.Comma):
                last[-1] = last[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            new_param = cst.Param(cst.Name(name), annotation, default=default)
            params = params.with_changes(params=[*last, new_param])
        mapping: dict[cst.CSTNode, cst.CSTNode] = {kernel.params: params}
        for call, _ in sites:
            mapping[call] = _with_kwarg(call, name, name)
        yield Edit(
            _replace_many(tree.module, mapping), tree.line(kernel), f"{kernel.name.value} takes {name}"
        )


def _function_of(tree: Tree, node: cst.CSTNode) -> cst.FunctionDef | None:
    parent = tree.parent(node)
    while parent is not None and not isinstance(parent, cst.FunctionDef):
        parent = tree.parent(parent)
    return parent


def _in_function(tree: Tree, node: cst.CSTNode, name: str) -> bool:
    parent = tree.parent(node)
    while parent is not None:
        if isinstance(parent, cst.FunctionDef) and parent.name.value == name:
            return True
        parent = tree.parent(parent)
    return False



# ---------------------------------------------------------------- a wrapper written for fewer dimensions


_UNPACK = re.compile(r"too many values to unpack \(expected (\d+)\)")
_TOO_FEW = re.compile(r"not enough values to unpack \(expected (\d+), got (\d+)\)")
_NDIM = re.compile(r"^(?:(\w+)\.ndim|(\w+)\.dim\(\)|len\((\w+)\.shape\))\s*==\s*(\d+)$")


def _fewer_dims(tree: Tree, fn: cst.FunctionDef, line: int) -> tuple[str, int] | None:
    """(parameter, dims) when the statement of `fn` at `line` unpacks a parameter's shape into fewer names
    than its input has (`M, K = x.shape`) or asserts its number of dimensions (`assert x.ndim == 2`)."""
    params = {p.name.value for p in _params(fn)}
    for stmt in findall(fn.body, m.SimpleStatementLine()):
        assert isinstance(stmt, cst.SimpleStatementLine)
        if tree.line(stmt) != line:
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, _render(small.value)
                shaped = re.fullmatch(r"(\w+)\.(?:shape|size\(\))", value)
                if isinstance(target, cst.Tuple) and shaped and shaped.group(1) in params:
                    return shaped.group(1), len(target.elements)
            if isinstance(small, cst.Assert):
                for part in re.split(r"\s+and\s+", _render(small.test)):
                    got = _NDIM.match(part.strip())
                    if got and (name := got.group(1) or got.group(2) or got.group(3)) in params:
                        return name, int(got.group(4))
    return None


@rule(
    "flatten_leading_dims",
    title="a wrapper written for 2-D input gets the reference's N-D input",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "runtime_error", "other"),
    per="module",
)
def flatten_leading_dims(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`M, K = x.shape` (or `assert x.ndim == 2`) in a wrapper the reference calls with (batch, seq, hidden):
    the leading dimensions are folded into the first one on the way in (`x.reshape(-1, x.shape[-1])`) and
    unfolded on every returned tensor on the way out, so the kernel sees the 2-D problem it was written
    for."""
    crash = _crash(context)
    line = crash.get("line")
    if not crash or not isinstance(line, int):
        return
    text = _text(crash)
    few = _TOO_FEW.search(text)
    if not (_UNPACK.search(text) or few or "AssertionError" in text):
        return
    kernels = set(_kernels(tree.module))
    for fn in findall(tree.module, m.FunctionDef()):
        assert isinstance(fn, cst.FunctionDef)
        if fn in kernels or not tree.line(fn) < line <= tree.line(fn, end=True):
            continue
        found = _fewer_dims(tree, fn, line)
        if found is None or found[1] < 2:
            continue
        name, dims = found
        returns = [r for r in findall(fn.body, m.Return()) if _function_of(tree, r) is fn]
        single = all(isinstance(r, cst.Return) and r.value is not None and not m.matches(r.value, m.Tuple())
                     for r in returns)
        if not returns or not single:
            continue  # a tuple or nothing: where the leading dimensions go back is unclear
        back = f"{name}_back"
        missing_dims = int(few.group(1)) - int(few.group(2)) if few else 0
        if missing_dims > 0:
            # Fewer dimensions than the wrapper unpacks: leading 1s on the way in, dropped on the way out.
            prologue_code = [
                f"{name} = {name}.reshape(*([1] * {missing_dims}), *{name}.shape)",
                f"{back} = lambda t: t.reshape(*t.shape[{missing_dims}:])",
            ]
        else:
            prologue_code = [
                f"{back} = lambda t, lead={name}.shape[:-{dims - 1}]: t.reshape(*lead, *t.shape[1:])",
                f"{name} = {name}.reshape(-1, *{name}.shape[-{dims - 1}:])",
            ]
        mapping: dict[cst.CSTNode, cst.CSTNode] = {}
        for r in returns:
            assert isinstance(r, cst.Return) and r.value is not None
            mapping[r] = r.with_changes(value=cst.Call(func=cst.Name(back), args=[cst.Arg(r.value)]))
        body = fn.body
        assert isinstance(body, cst.IndentedBlock)
        docstring = m.SimpleStatementLine([m.Expr(m.SimpleString())])
        at = 1 if body.body and m.matches(body.body[0], docstring) else 0
        prologue = [cst.parse_statement(code + "\n") for code in prologue_code]
        module = _replace_many(tree.module, mapping)
        same_name = m.FunctionDef(name=m.Name(fn.name.value))
        new_fn = next(
            f
            for f in findall(module, same_name)
            if isinstance(f, cst.FunctionDef) and f.params.deep_equals(fn.params)
        )
        assert isinstance(new_fn, cst.FunctionDef) and isinstance(new_fn.body, cst.IndentedBlock)
        new_body = new_fn.body.with_changes(body=[*new_fn.body.body[:at], *prologue, *new_fn.body.body[at:]])
        module = module.deep_replace(new_fn, new_fn.with_changes(body=new_body))  # type: ignore[assignment]
        yield Edit(
            module, tree.line(fn), f"{fn.name.value} folds {name}'s leading dimensions into one and back"
        )


# ---------------------------------------------------------------- a torch.Tensor attribute misspelled


_NO_ATTRIBUTE = re.compile(r"'Tensor' object has no attribute '(\w+)'")


@lru_cache(maxsize=1)
def _tensor_attributes() -> dict[str, bool]:
    """torch.Tensor's public attributes -> whether each is a method (called) or a property."""
    import torch

    return {
        name: callable(getattr(torch.Tensor, name, None))
        and not isinstance(getattr(torch.Tensor, name), property)
        for name in dir(torch.Tensor)
        if not name.startswith("_")
    }


@rule(
    "tensor_attribute",
    title="a torch.Tensor attribute that does not exist (`x.strides`, `x.dims`)",
    bug_class="api_drift",
    symptoms=("api_drift", "wrapper_launch_error", "runtime_error", "other"),
    per="module",
)
def tensor_attribute(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`'Tensor' object has no attribute 'strides'`: the closest real attribute (`stride`), called when it is
    a method and the code read it as a property, on the crashing line."""
    crash = _crash(context)
    missing = _NO_ATTRIBUTE.search(str(crash.get("message", "")))
    line = crash.get("line")
    if not missing or not isinstance(line, int):
        return
    attributes = _tensor_attributes()
    close = difflib.get_close_matches(missing.group(1), list(attributes), n=2, cutoff=0.75)
    for name in close:
        mapping: dict[cst.CSTNode, cst.CSTNode] = {}
        for node in findall(tree.module, m.Attribute(attr=m.Name(missing.group(1)))):
            assert isinstance(node, cst.Attribute)
            if tree.line(node) != line:
                continue
            new: cst.BaseExpression = node.with_changes(attr=cst.Name(name))
            parent = tree.parent(node)
            called = isinstance(parent, cst.Call) and parent.func is node
            if attributes[name] and not called:
                new = cst.Call(func=new)
            mapping[node] = new
        if mapping:
            what = f"{missing.group(1)} -> {name} (torch.Tensor)"
            yield Edit(_replace_many(tree.module, mapping), line, what)


# ---------------------------------------------------------------- a check that cannot even run


@rule(
    "broken_check",
    title="a host-side assert whose own test raises (an invented method, a misspelled name)",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "api_drift", "runtime_error", "other"),
    per="module",
)
def broken_check(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`assert x.is_triton_compatible()` raises AttributeError before it checks anything: an assert computes
    nothing the kernel uses, so the statement goes. A check that runs and fails (AssertionError) is left to
    the rules that know what it checks (`host_device` for `is_cuda`)."""
    crash = _crash(context)
    line = crash.get("line")
    if not crash or crash.get("exception") == "AssertionError" or not isinstance(line, int):
        return
    if crash.get("in_kernel"):
        return
    kernels = set(_kernels(tree.module))
    for stmt in findall(tree.module, m.SimpleStatementLine(body=[m.Assert()])):
        assert isinstance(stmt, cst.SimpleStatementLine)
        if tree.line(stmt) != line:
            continue
        fn = _function_of(tree, stmt)
        if fn is None or fn in kernels:
            continue
        yield Edit(
            _replace_many(tree.module, {stmt: cst.RemovalSentinel.REMOVE}),  # type: ignore[dict-item]
            line,
            f"drop the check that cannot run ({crash.get('exception')})",
        )
