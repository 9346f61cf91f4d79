"""What the reference's PyTorch calls compute, in words an LLM can copy into a kernel.

A near-miss often computes a near relative of the operator: gelu's tanh form for the exact one, Keras'
hardsigmoid constants, a softmax scale over the wrong dimension, a mean over every row where cross-entropy
skips ignored targets. The reference names the operator but not its definition, and a small model
misremembers it the same way the kernel's author did. `prompts/torch_semantics.toml` holds PyTorch's
definitions (defaults and conventions included) for the operators with such pitfalls; the prompts quote the
ones the reference calls.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib.resources

import tomllib

_SKIPPED_FUNCTIONS = ("get_inputs", "get_init_inputs")
"""Input builders: their calls make the test data, not the operator."""


@functools.cache
def _definitions() -> dict[str, tuple[str, str]]:
    """Call name -> (operator, definition), from the table shipped with the prompts."""
    table = tomllib.loads(
        importlib.resources.files("kernel_medic.prompts").joinpath("torch_semantics.toml").read_text("utf-8")
    )
    return {call: (op, entry["text"]) for op, entry in table.items() for call in entry["calls"]}


def _called_name(node: ast.Call) -> str | None:
    """`F.gelu(x)`, `nn.GELU()`, `x.softmax(1)` -> the last name; a bare call only if it is no Python builtin
    (`max(a, b)` is Python's, `gelu(x)` imported from torch is not)."""
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node.func, ast.Name) and not hasattr(builtins, node.func.id):
        return node.func.id
    return None


def reference_semantics(reference_source: str, limit: int = 4, width: int = 70) -> list[str]:
    """One line per operator the reference calls that the table defines, in order of first call: the call
    as written (clipped to `width`) and its definition. At most `limit` lines."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return []
    skipped = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name in _SKIPPED_FUNCTIONS
        for n in ast.walk(f)
    }
    calls = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call) and id(n) not in skipped),
        key=lambda n: (n.lineno, n.col_offset),
    )
    table = _definitions()
    seen: set[str] = set()
    lines: list[str] = []
    for call in calls:
        name = _called_name(call)
        if name not in table or table[name][0] in seen:
            continue
        op, definition = table[name]
        seen.add(op)
        written = " ".join((ast.get_source_segment(reference_source, call) or name).split())
        if len(written) > width:
            written = written[: width - 3] + "..."
        lines.append(f"`{written}`: {definition}")
        if len(lines) >= limit:
            break
    return lines
