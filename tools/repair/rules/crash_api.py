"""Crash rules for the module as a whole: Triton API drift, missing imports, demo code run at import.

Each acts only when the evaluation reported a crash (`RuleContext.crash`), so they never add noise to a
near-miss search. The API table is data (`triton_api_moves.toml`): old module prefixes (`tl.libdevice`,
`tl.math`...), renamed functions and where every libdevice function lives in Triton 3.x.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst
import libcst.matchers as m
from kernel_medic.tools.repair.rules.base import (
    Edit,
    RuleContext,
    Tree,
    _dotted,
    _expr,
    _kernels,
    _render,
    rule,
    rules_of,
)
from kernel_medic.tools.repair.rules.cst_find import findall

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

MOVES_FILE = Path(__file__).with_name("triton_api_moves.toml")

# NameError -> the import that defines the name (what generated kernels forget most).
IMPORTS = {
    "torch": "import torch",
    "nn": "import torch.nn as nn",
    "F": "import torch.nn.functional as F",
    "triton": "import triton",
    "tl": "import triton.language as tl",
    "math": "import math",
    "functools": "import functools",
    "libdevice": "from triton.language.extra.cuda import libdevice",
    **{
        name: f"from typing import {name}"
        for name in ("Optional", "List", "Tuple", "Dict", "Union", "Any", "Callable", "Sequence", "Iterable")
    },
}


@lru_cache(maxsize=1)
def api_moves() -> dict[str, Any]:
    """The table: {"modules": [old prefixes], "renames": {...}, "attributes": {...}, "functions": {...}}."""
    data = tomllib.loads(MOVES_FILE.read_text(encoding="utf-8"))
    return {
        "modules": list(data["modules"]["old"]),
        "renames": dict(data.get("renames") or {}),
        "attributes": dict(data.get("attributes") or {}),
        "functions": dict(data["functions"]),
        "kernel_hosts": list((data.get("kernel_hosts") or {}).get("modules") or []),
    }


def moved(dotted: str) -> str | None:
    """The Triton 3.x spelling of an old dotted name (`tl.libdevice.tanh`: `tl.extra.cuda.libdevice.tanh`)."""
    table = api_moves()
    if dotted in table["attributes"]:
        return str(table["attributes"][dotted])
    prefix, _, name = dotted.rpartition(".")
    if prefix not in table["modules"]:
        return None
    # Renames belong to the old math modules: `tl.max` is a reduction, `tl.math.max` was elementwise.
    new = (None if prefix == "tl" else table["renames"].get(name)) or table["functions"].get(name)
    return str(new) if new and new != dotted else None


def _module_of(dotted: str) -> str:
    """`tl.extra.cuda.libdevice` -> `triton.language.extra.cuda.libdevice` (an importable module path)."""
    return "triton.language" + dotted.removeprefix("tl") if dotted.startswith("tl") else dotted


_DTYPES = frozenset(
    ("float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")
)


_TORCH_FACTORIES = frozenset(
    ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like", "arange")
)


def _on_host(tree: Tree, node: cst.CSTNode, kernels: set[cst.FunctionDef]) -> bool:
    """Outside every `@triton.jit` function and not an argument of a kernel launch (`k[grid](..)`)."""
    parent = tree.parent(node)
    while parent is not None:
        if parent in kernels:
            return False
        if isinstance(parent, cst.Call) and isinstance(parent.func, cst.Subscript):
            return False
        parent = tree.parent(parent)
    return True


# Triton math called on host numbers (a wrapper computing its block size with `tl.` functions).
_HOST_MATH = {
    "ceil": "math.ceil",
    "floor": "math.floor",
    "log2": "math.log2",
    "log": "math.log",
    "exp": "math.exp",
    "sqrt": "math.sqrt",
    "cdiv": "triton.cdiv",
    "maximum": "max",
    "minimum": "min",
    "next_power_of_2": "triton.next_power_of_2",
}


# The import each new spelling needs, in the order they are added.
_SPELLING_IMPORTS = (("math", "import math"), ("tl", "import triton.language as tl"))


def _in_torch_call(tree: Tree, node: cst.CSTNode) -> bool:
    """An argument of the innermost call around `node`, that call being `torch.*` or a `tl.` factory."""
    parent = tree.parent(node)
    while parent is not None and not isinstance(parent, cst.Call):
        parent = tree.parent(parent)
    head = (_dotted(parent.func) or "") if isinstance(parent, cst.Call) else ""
    package = head.partition(".")[0]
    return package == "torch" or (package in ("tl", "triton") and head.rpartition(".")[2] in _TORCH_FACTORIES)


def _crash(context: RuleContext | None) -> dict[str, Any]:
    return context.crash if context is not None else {}


@rule(
    "api_moves",
    title="Triton API renamed or moved between releases",
    bug_class="api_drift",
    symptoms=("api_drift", "compile_error", "runtime_error"),
    per="module",
)
def api_moves_rule(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Every old spelling (`tl.libdevice.X`, `tl.math.X`, ...) rewritten to where Triton 3.x has it."""
    if not _crash(context):
        return
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    first: cst.CSTNode | None = None
    names: list[str] = []
    kernels = set(_kernels(tree.module))
    for node in findall(tree.module, m.Attribute()):
        assert isinstance(node, cst.Attribute)
        dotted = _dotted(node)
        new = moved(dotted) if dotted else None
        head, _, attr = (dotted or "").rpartition(".")
        package = head.split(".")[0]
        if package in ("triton", "tl") and attr in _TORCH_FACTORIES and _on_host(tree, node, kernels):
            new = f"torch.{attr}"  # `triton.empty((M, N))` in a wrapper: torch allocates on the host
        elif head == "tl" and attr in _HOST_MATH and _on_host(tree, node, kernels):
            parent = tree.parent(node)
            if isinstance(parent, cst.Call) and parent.func is node:
                new = _HOST_MATH[attr]  # `2 ** tl.ceil(tl.log2(n))` on host integers
        elif head == "tl" and attr in _DTYPES and _on_host(tree, node, kernels):
            if _in_torch_call(tree, node):
                new = f"torch.{attr}"  # `torch.empty(n, dtype=tl.float32)`
        if new is None or any(node is k or _contains(k, node) for k in mapping):
            continue
        if new.startswith("tl.") and new[3:] in _DTYPES and _on_host(tree, node, kernels):
            new = f"torch.{new[3:]}"  # `x.dtype == triton.float16` on the host compares torch dtypes
        mapping[node] = _expr(new)
        first = first or node
        names.append(f"{dotted} -> {new}")
    qualified: dict[str, str] = {}  # a name imported from Triton -> its dotted `tl.` spelling
    for node in findall(tree.module, m.ImportFrom()):
        assert isinstance(node, cst.ImportFrom)
        source = _dotted(node.module) if node.module is not None else None
        source = "tl" if source == "triton.language" else source
        if source is None or isinstance(node.names, cst.ImportStar) or node.relative:
            continue
        if not (source == "tl" or source.startswith("tl.") or source in api_moves()["modules"]):
            continue
        kept, changed = [], False
        for alias in node.names:
            name = _dotted(alias.name) or ""
            bound = (
                alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            )
            new = moved(f"{source}.{name}")
            target = new or f"{source}.{name}"
            if name in _MODULE_NAMES or target.rsplit(".", 1)[-1] in _MODULE_NAMES:
                # a module (libdevice): import it from where it lives now
                home, _, attr = target.rpartition(".")
                kept.append(
                    f"from {_module_of(home)} import {attr}" + (f" as {bound}" if bound != attr else "")
                )
                changed = changed or new is not None
            else:
                # a function (or dtype) imported by name: the old module may be gone, and the CPU interpreter
                # only patches `tl.` attributes, so every use is spelled `tl.<where it lives now>`
                qualified[bound] = target
                changed = True
            if new is not None:
                names.append(f"{source}.{name} -> {new}")
        stmt = tree.parent(node)
        if changed and isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            if kept:
                line = cst.parse_statement("; ".join(kept) + "\n")
                mapping[stmt] = line.with_changes(leading_lines=stmt.leading_lines)
            else:
                mapping[stmt] = cst.RemovalSentinel.REMOVE  # type: ignore[assignment]
            first = first or stmt
    for use in _name_uses(tree.module, set(qualified)) if qualified else []:
        mapping[use] = _expr(qualified[use.value])
        names.append(f"{use.value} -> {qualified[use.value]}")
    # A new `tl.` / `math.` spelling in a file that never imported it (`triton.program_id` -> `tl.`...).
    spelled = {n.split(" -> ")[-1].split(".")[0] for n in names}
    present = _module_names(tree.module)
    imports = [line for alias, line in _SPELLING_IMPORTS if alias in spelled and alias not in present]
    anchor = next((s for s in tree.module.body if isinstance(s, cst.SimpleStatementLine)), None)
    if imports and anchor is not None and anchor not in mapping:
        names += imports
        mapping[anchor] = cst.FlattenSentinel([*(cst.parse_statement(i + "\n") for i in imports), anchor])
    if mapping and first is not None:
        module = tree.module.visit(_Swap(mapping))
        yield Edit(module, tree.line(first), "Triton API moved: " + ", ".join(dict.fromkeys(names)))


@rule(
    "kernel_host_math",
    title="host math (math.*, torch.*) called on tensors inside a Triton kernel",
    bug_class="api_drift",
    symptoms=("api_drift", "type_mismatch", "compile_error", "runtime_error"),
    per="kernel",
)
def kernel_host_math(tree: Tree, fn: cst.FunctionDef, context: RuleContext | None) -> Iterator[Edit]:
    """`math.exp(x)` / `torch.tanh(x)` in a jitted body -> `tl.exp(x)` / `tl.extra.cuda.libdevice.tanh(x)`.

    Only calls whose arguments are not all numeric literals (a constant folded on the host is fine)."""
    if not _crash(context):
        return
    table = api_moves()
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for call in findall(fn.body, m.Call(func=m.Attribute())):
        assert isinstance(call, cst.Call)
        dotted = _dotted(call.func) or ""
        host, _, name = dotted.rpartition(".")
        if host not in table["kernel_hosts"] or all(
            isinstance(a.value, cst.Integer | cst.Float) for a in call.args
        ):
            continue
        new = table["renames"].get(name) or table["functions"].get(name)
        if new:
            mapping[call.func] = _expr(str(new))
    if mapping:
        first = next(iter(mapping))
        what = ", ".join(f"{_dotted(k)} -> {_dotted(v)}" for k, v in mapping.items())  # type: ignore[arg-type]
        yield Edit(tree.module.visit(_Swap(mapping)), tree.line(first), f"{fn.name.value}: {what}")


_MODULE_NAMES = {"libdevice", "math", "core", "extra", "cuda", "hip", "semantic", "standard"}


def _name_uses(module: cst.Module, names: set[str]) -> list[cst.Name]:
    """Name nodes that read one of `names` (not attribute names, keywords, parameters, imports, defs)."""
    found: list[cst.Name] = []

    class Uses(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in names:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Param(self, node: cst.Param) -> bool:
            if node.default is not None:
                node.default.visit(self)
            if node.annotation is not None:
                node.annotation.visit(self)
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            for part in (*node.decorators, node.params, node.body):
                part.visit(self)
            return False

    module.visit(Uses())
    return found


def _module_names(module: cst.Module) -> set[str]:
    """Names bound by top-level imports."""
    out: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(
                    small.names, cst.ImportStar
                ):
                    for alias in small.names:
                        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                            out.add(alias.asname.name.value)
                        else:
                            out.add((_dotted(alias.name) or "").split(".")[0])
    return out


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    return any(n is inner for n in findall(outer, m.Attribute()))


class _Swap(cst.CSTTransformer):
    def __init__(self, mapping: dict[cst.CSTNode, cst.CSTNode]) -> None:
        self.mapping = mapping

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        return self.mapping.get(original_node, updated_node)


_NAME_ERROR = re.compile(r"name '(\w+)' is not defined")


@rule(
    "drop_unused_import",
    title="an import that fails and whose names are never used",
    bug_class="import_error",
    symptoms=("import_error", "api_drift", "compile_error"),
    per="module",
)
def drop_unused_import(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """The import statement on the failing line (ImportError, ModuleNotFoundError) whose names nothing else
    uses is removed (a leftover `from triton.runtime.jit import get_cuda_stream`)."""
    crash = _crash(context)
    failed = crash.get("exception") in ("ImportError", "ModuleNotFoundError")
    if not failed or not isinstance(crash.get("line"), int):
        return
    for stmt in findall(tree.module, m.SimpleStatementLine()):
        assert isinstance(stmt, cst.SimpleStatementLine)
        if tree.line(stmt) != crash["line"] or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        if not isinstance(small, cst.Import | cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
            continue
        bound = set()
        for alias in small.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound.add(alias.asname.name.value)
            else:
                bound.add((_dotted(alias.name) or "").split(".")[0])
        if not _name_uses(tree.module, bound):
            removed = tree.replace(stmt, cst.RemovalSentinel.REMOVE)  # type: ignore[arg-type]
            yield Edit(removed, tree.line(stmt), "remove an import that fails and is never used")


@rule(
    "missing_import",
    title="a name used but never imported",
    bug_class="import_error",
    symptoms=("import_error", "compile_error", "runtime_error"),
    per="module",
)
def missing_import(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """`NameError: name 'Optional' is not defined` -> `from typing import Optional` after the imports."""
    crash = _crash(context)
    found = _NAME_ERROR.search(str(crash.get("message", "")))
    if not found or found.group(1) not in IMPORTS:
        return
    statement = cst.parse_statement(IMPORTS[found.group(1)] + "\n")
    body = list(tree.module.body)
    # After the file's leading imports (and docstring), before anything uses the name: not after a late
    # import further down (generated files and importers' wrappers append imports at the end).
    at = 0
    for i, stmt in enumerate(body):
        leading = isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, cst.Import | cst.ImportFrom)
            or (isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString))
            for s in stmt.body
        )
        if not leading:
            break
        at = i + 1
    line = tree.line(body[at - 1], end=True) if at else 1
    module = tree.module.with_changes(body=[*body[:at], statement, *body[at:]])
    yield Edit(module, line, f"import {found.group(1)} ({IMPORTS[found.group(1)]})")


def _is_definition(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, cst.FunctionDef | cst.ClassDef):
        return True
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body)
    if isinstance(stmt, cst.If):
        return "__main__" in cst.Module([]).code_for_node(stmt.test)
    return False


_SEEDING = re.compile(
    r"(?:torch(?:\.cuda|\.random)?\.manual_seed(?:_all)?|random\.seed|(?:np|numpy)\.random\.seed)\(.*\)",
    re.S,
)


@rule(
    "drop_import_time_code",
    title="demo or test code that runs (and crashes) at import",
    bug_class="import_error",
    symptoms=("import_error", "compile_error"),
    per="module",
)
def drop_import_time_code(tree: Tree, context: RuleContext | None) -> Iterator[Edit]:
    """Remove the module-level statement that crashed at import (and, as a second offer, the rest after it).

    A generation's own test code (`x = torch.randn(..., device="cuda")`, a benchmark, a `print`) is no part
    of the problem's contract; definitions and imports are never removed.
    """
    crash = _crash(context)
    line = crash.get("module_line") if crash.get("phase") == "import" else None
    if not isinstance(line, int):
        return
    body = list(tree.module.body)
    at = next(
        (i for i, s in enumerate(body) if tree.line(s) <= line <= tree.line(s, end=True)),
        None,
    )
    if at is None or _is_definition(body[at]):
        return
    rest = [i for i in range(at + 1, len(body)) if not _is_definition(body[i])]
    # Seeding the global RNG at import belongs to the same demo code, and the integrity gate refuses it
    # (a candidate must not steer the inputs it is judged on): it goes with the crashing statement.
    seeds = {
        i
        for i, s in enumerate(body)
        if isinstance(s, cst.SimpleStatementLine) and _SEEDING.fullmatch(_render(s.body[0]).strip())
    }
    yield Edit(
        tree.module.with_changes(body=[s for i, s in enumerate(body) if i != at and i not in seeds]),
        tree.line(body[at]),
        "remove module-level code that crashes at import",
    )
    if rest:
        gone = {at, *rest, *seeds}
        yield Edit(
            tree.module.with_changes(body=[s for i, s in enumerate(body) if i not in gone]),
            tree.line(body[at]),
            "remove module-level demo code from the crashing statement on",
        )


RULES = rules_of(__name__)
