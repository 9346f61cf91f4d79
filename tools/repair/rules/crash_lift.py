"""A crash rule for a `@triton.jit` device function called on whole tensors from host code.

Generated files often write the operator as a device function over values (`def logit(x, eps=None):
return tl.log(x / (1 - x))`) and then call it from Python as if it were a torch function. Interpreted, the
body runs as Python on whole tensors and fails at its first `tl.` call; compiled, a jit function cannot be
called outside a kernel at all. What is missing is only the launch: this rule adds an elementwise kernel
that loads each tensor argument block by block, calls the device function and stores its value, and a host
launcher (broadcast, allocate, launch) that the host call goes to. The device function itself is untouched.

Only device functions that are elementwise by construction are lifted: no loads, stores, program ids,
ranges, reductions or dots in their body, and one value returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _dotted,
    _kernels,
    _replace_many,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

# Calls that make a device function more than elementwise: it indexes memory or combines elements.
_NOT_ELEMENTWISE = {
    "tl.load", "tl.store", "tl.program_id", "tl.num_programs", "tl.arange", "tl.sum", "tl.max", "tl.min",
    "tl.argmax", "tl.argmin", "tl.dot", "tl.reduce", "tl.cumsum", "tl.cumprod", "tl.associative_scan",
    "tl.reshape", "tl.view", "tl.trans", "tl.permute", "tl.broadcast_to", "tl.atomic_add", "tl.softmax",
    "tl.zeros", "tl.full", "tl.make_block_ptr", "tl.sort", "tl.flip", "tl.xor_sum",
}  # fmt: skip
BLOCK = 1024


def _crash(context: RuleContext | None) -> dict[str, Any]:
    return context.crash if context is not None else {}


def _elementwise(fn: cst.FunctionDef) -> bool:
    calls = {_dotted(c.func) for c in findall(fn.body, m.Call()) if isinstance(c, cst.Call)}
    if calls & _NOT_ELEMENTWISE or isinstance(fn.params.star_arg, cst.Param):
        return False  # a bare `*` (keyword-only parameters follow) is fine, `*args` is not
    if fn.params.star_kwarg is not None:
        return False
    returns = [r for r in findall(fn.body, m.Return()) if isinstance(r, cst.Return)]
    return bool(returns) and all(r.value is not None and not isinstance(r.value, cst.Tuple) for r in returns)


def _signature(call: cst.Call) -> tuple[int, tuple[str, ...]] | None:
    """(number of positional arguments, keyword names) of a plain call, None with *args / **kwargs."""
    if any(a.star for a in call.args):
        return None
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) != len([a for a in call.args[: len(positional)] if a.keyword is None]):
        return None  # a positional argument after a keyword one
    return len(positional), tuple(a.keyword.value for a in call.args if a.keyword is not None)


def _launch_code(name: str, n_args: int, keywords: tuple[str, ...]) -> tuple[str, str]:
    """The elementwise kernel and its host launcher for `name` called with `n_args` tensors + keywords."""
    kernel, launcher = f"_{name}_kmedic_kernel", f"_{name}_kmedic"
    ptrs = [f"a{i}_ptr" for i in range(n_args)]
    values = [f"a{i}" for i in range(n_args)]
    constexprs = [f"{k}: tl.constexpr" for k in keywords]
    loads = "".join(f"    a{i} = tl.load(a{i}_ptr + offs, mask=mask)\n" for i in range(n_args))
    passed = ", ".join([*values, *(f"{k}={k}" for k in keywords)])
    kernel_code = (
        "@triton.jit\n"
        f"def {kernel}(out_ptr, {', '.join([*ptrs, 'n', 'BLOCK: tl.constexpr', *constexprs])}):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        f"{loads}"
        f"    tl.store(out_ptr + offs, {name}({passed}), mask=mask)\n"
    )
    params = ", ".join([*values, *(f"{k}=None" for k in keywords)])
    launcher_code = (
        f"def {launcher}({params}):\n"
        f'    """Launches `{name}` elementwise over its tensor arguments (broadcast to one shape)."""\n'
        f"    given = [{', '.join(values)}]\n"
        "    device = next(a.device for a in given if isinstance(a, torch.Tensor))\n"
        "    tensors = [torch.as_tensor(a, device=device) for a in given]\n"
        "    tensors = [t.contiguous() for t in torch.broadcast_tensors(*tensors)]\n"
        "    out = torch.empty_like(tensors[0])\n"
        "    n = out.numel()\n"
        "    if n:\n"
        f"        {kernel}[(triton.cdiv(n, {BLOCK}),)](out, *tensors, n, BLOCK={BLOCK}"
        + "".join(f", {k}={k}" for k in keywords)
        + ")\n"
        "    return out\n"
    )
    return kernel_code, launcher_code


@rule(
    "device_function_launch",
    title="a @triton.jit device function called on tensors from host code, never launched",
    bug_class="wrapper_launch_error",
    symptoms=("wrapper_launch_error", "compile_error", "runtime_error"),
    per="module",
)
def device_function_launch(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`y = f(x, eps=e)` on the host, `f` an elementwise device function -> `y = _f_kmedic(x, eps=e)`: an
    added kernel loads `x` block by block and stores `f(x, eps=eps)`; its launcher broadcasts the tensor
    arguments, allocates the output like the first and launches one program per block."""
    if not _crash(context):
        return
    module = tree.module
    kernels = {k.name.value: k for k in _kernels(module)}
    inside = {id(c) for k in kernels.values() for c in findall(k, m.Call())}
    defined = {s.name.value for s in module.body if isinstance(s, cst.FunctionDef | cst.ClassDef)}
    sites: dict[tuple[str, int, tuple[str, ...]], list[cst.Call]] = {}
    for call in findall(module, m.Call(func=m.Name())):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
        name = call.func.value
        fn = kernels.get(name)
        # A host function of the same name shadows the kernel at module level: not this rule's case.
        shadowed = sum(isinstance(s, cst.FunctionDef) and s.name.value == name for s in module.body) > 1
        if fn is None or id(call) in inside or shadowed or not _elementwise(fn):
            continue
        signature = _signature(call)
        if signature is None or signature[0] == 0:
            continue
        sites.setdefault((name, *signature), []).append(call)
    for (name, n_args, keywords), calls in sites.items():
        kernel_code, launcher_code = _launch_code(name, n_args, keywords)
        if f"_{name}_kmedic" in defined:
            continue
        mapping: dict[cst.CSTNode, cst.CSTNode] = {c.func: cst.Name(f"_{name}_kmedic") for c in calls}
        fn = kernels[name]
        anchor = next(
            s for s in module.body if s is fn or any(n is fn for n in findall(s, m.FunctionDef()))
        )
        added = [cst.parse_statement(kernel_code), cst.parse_statement(launcher_code)]
        added = [added[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]), added[1]]
        added[1] = added[1].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        new_module = _replace_many(module, mapping)
        body = list(new_module.body)
        at = next(i for i, s in enumerate(module.body) if s is anchor) + 1
        new_module = new_module.with_changes(body=[*body[:at], *added, *body[at:]])
        bound = _bound(module)
        needed = [f"import {name}" for name in ("torch", "triton") if name not in bound]
        if needed:
            new_module = new_module.with_changes(
                body=[*(cst.parse_statement(i + "\n") for i in needed), *new_module.body]
            )
        what = f"launch the device function {name} elementwise ({n_args} tensor argument(s))"
        yield Edit(new_module, tree.line(calls[0]), what)


def _bound(module: cst.Module) -> set[str]:
    out: set[str] = set()
    for imp in findall(module, m.Import()):
        assert isinstance(imp, cst.Import)
        for alias in imp.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                out.add(alias.asname.name.value)
            else:
                out.add((_dotted(alias.name) or "").split(".")[0])
    return out


RULES = rules_of(__name__)
