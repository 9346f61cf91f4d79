"""The layout is the architecture: each package says in its docstring what it may import, and that holds.

Every `kernel_medic` import counts, also those inside functions and under `TYPE_CHECKING`: a lazy import is
still a dependency, and hiding a cycle inside a function is how cycles creep back in.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = ("graph", "nodes", "tools", "vectordb", "prompts")
MAX_TOOLS_MODULE_LINES = 800


def _modules() -> dict[str, Path]:
    found = {"kernel_medic": ROOT / "kernel_medic" / "__init__.py"}
    for top in TOP:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(("kernel_medic", *parts))
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()
PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def _package_of(module: str) -> str:
    return module if module in PACKAGES else module.rsplit(".", 1)[0]


def _imports(module: str) -> set[str]:
    """The kernel_medic modules (or packages) `module` imports, wherever in the file the import is."""
    return _imports_in(MODULES[module].read_text(encoding="utf-8"), _package_of(module))


def _imports_in(source: str, here: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "kernel_medic")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != "kernel_medic":
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}"
                out.add(target if target in MODULES else base)
    return out


def _allowed(package: str) -> set[str]:
    doc = ast.get_docstring(ast.parse(MODULES[package].read_text(encoding="utf-8"))) or ""
    found = re.search(r"^May import:(.*?)(?:\n\n|\Z)", doc, re.S | re.M)
    assert found, f"{MODULES[package].relative_to(ROOT)}: the docstring must say 'May import: ...'"
    text = found.group(1).strip()
    return set() if text.startswith("nothing") else {p.strip() for p in text.replace("\n", " ").split(",")}


@pytest.mark.parametrize("package", sorted(PACKAGES - {"kernel_medic"}))
def test_each_package_imports_only_what_its_docstring_allows(package: str) -> None:
    allowed = _allowed(package) | {package}
    for name in sorted(m for m in MODULES if _package_of(m) == package):
        for target in sorted(_imports(name)):
            assert _package_of(target) in allowed, (
                f"{MODULES[name].relative_to(ROOT)} imports {target}; {package} may import only "
                f"{', '.join(sorted(allowed))} (its __init__ docstring)"
            )


def test_tools_and_vectordb_never_import_the_graph_or_the_nodes() -> None:
    upward = [
        f"{MODULES[m].relative_to(ROOT)} -> {t}"
        for m in MODULES
        if m.startswith(("kernel_medic.tools", "kernel_medic.vectordb"))
        for t in _imports(m)
        if t.startswith(("kernel_medic.graph", "kernel_medic.nodes"))
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    edges = {m: sorted(t for t in _imports(m) if t in MODULES and t != m) for m in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in edges[module]:
            if state.get(target) == 1:
                cycles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert cycles == []


def test_no_module_under_tools_outgrows_one_concern() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for m, p in MODULES.items()
        if m.startswith("kernel_medic.tools") and (n := len(p.read_text(encoding="utf-8").splitlines()))
        > MAX_TOOLS_MODULE_LINES
    }
    assert long == {}


def test_the_layout_checks_see_a_planted_violation() -> None:
    """The checks above can fail: a lazy upward import and a relative one are both found and refused."""
    planted = "def f():\n    from kernel_medic.graph.api import repair\n    from ..evaluation import cases\n"
    found = _imports_in(planted, "kernel_medic.tools.sandbox")
    assert found == {"kernel_medic.graph.api", "kernel_medic.tools.evaluation.cases"}
    allowed = _allowed("kernel_medic.tools.sandbox")
    assert not {_package_of(t) for t in found} & allowed
