"""A version the integrity gate refused for host compute, without the host-side checks that did it.

Generated wrappers often validate their inputs on values (`assert (index < n).all()`,
`if torch.isnan(x).any(): raise ...`). The gate's held-back run counts those aten ops as host compute and
refuses an otherwise right repair; the reference checks nothing, so on valid inputs the same version without
the checks computes the same. Only a check that cannot feed the output goes: an `assert`, or an `if` whose
whole body raises (no `else`), outside every `@triton.jit` function, holding every refused line.
"""

from __future__ import annotations

import ast
from typing import Any

from kernel_medic.tools.evaluation.crashes import kernel_names


def after_refusal(source: str, findings: list[dict[str, Any]]) -> tuple[str, list[int]] | None:
    """For a refusal with host compute whose every placed finding (notes aside) points into the wrapper's
    input checks, the refused `source` without those checks (see `without_host_checks`); None for any
    other refusal. The static findings at a check's line (`torch_compute`) name the same compute; a finding
    with no line (`input_modified`: the held-back run stopped at the blocked check before its update) is
    what the blocked compute caused. The gate judges the version without the checks from scratch."""
    refusing = [f for f in findings if f.get("severity") != "note"]
    if not any(f.get("rule") == "host_compute" for f in refusing):
        return None
    placed = [int(f.get("line") or 0) for f in refusing]
    return without_host_checks(source, [ln for ln in placed if ln > 0])


def _checks(tree: ast.Module, kernels: set[str]) -> list[ast.stmt]:
    """Host-side `assert`s and raise-only `if`s, at any depth outside the `kernels` (jitted functions)."""
    found: list[ast.stmt] = []

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name in kernels:
                continue
            if isinstance(stmt, ast.Assert) or _raise_only(stmt):
                found.append(stmt)
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    visit(inner)
            for handler in getattr(stmt, "handlers", None) or []:
                visit(handler.body)

    visit(tree.body)
    return found


def _raise_only(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and not stmt.orelse and all(isinstance(s, ast.Raise) for s in stmt.body)


def without_host_checks(source: str, lines: list[int]) -> tuple[str, list[int]] | None:
    """`source` with the checks holding the refused `lines` removed, and the first line of each removed
    check; None when a refused line is in no such check (the refusal is about something else) or a check
    shares its lines with another statement."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not lines or any(ln <= 0 for ln in lines):  # a finding with no line cannot be placed
        return None
    wanted = sorted(set(lines))
    checks = _checks(tree, kernel_names(source))
    drop: list[ast.stmt] = []
    for ln in wanted:
        holder = next((c for c in checks if c.lineno <= ln <= (c.end_lineno or c.lineno)), None)
        if holder is None:
            return None
        if holder not in drop:
            drop.append(holder)
    text = source.splitlines(keepends=True)
    statements = [s for s in ast.walk(tree) if isinstance(s, ast.stmt)]
    removed: set[int] = set()
    for check in drop:
        first, last = check.lineno, check.end_lineno or check.lineno
        inner = {id(s) for s in ast.walk(check)}
        # Another statement on the same lines (`assert ok; y = f(x)`) would go with it.
        shared = any(first <= s.lineno <= last and id(s) not in inner for s in statements)
        if shared or text[first - 1][: check.col_offset].strip():
            return None
        removed |= set(range(first, last + 1))
    out: list[str] = []
    for i, line in enumerate(text, start=1):
        if i in removed:
            # A block left empty keeps a `pass` at the check's own indentation.
            if i - 1 not in removed and _block_empties(tree, i, removed):
                indent = line[: len(line) - len(line.lstrip())]
                out.append(f"{indent}pass\n")
            continue
        out.append(line)
    return "".join(out), sorted(c.lineno for c in drop)


def _block_empties(tree: ast.Module, first: int, removed: set[int]) -> bool:
    """Whether removing `removed` leaves the block holding the statement at `first` with no statement."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            if any(s.lineno == first for s in block):
                return all(s.lineno in removed for s in block)
    return False
