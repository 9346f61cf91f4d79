"""Completing a model's edit: names it misspelled, and the parallel lines it fixed only once.

Two slips small models make in otherwise right answers, both mechanical:
- a name that does not exist where it is used, written for one that does (`padding` where the wrapper says
  `pad`, `kernel_size` for `KS`): a certain NameError or compile error. When exactly one name in scope is
  its prefix, extension, initials or other-case spelling, the answer is read with that name.
- one of two parallel lines fixed and its twin left as it was (`H_out = ...` fixed, `W_out = ...` not; the
  A pointer advanced right, the B pointer not). A twin is a line of the same function that reads token for
  token like the edited line up to a one-to-one renaming of names (H_out->W_out, H->W); the same edit,
  renamed, is offered for it as a second candidate beside the answer as written.

Neither decides anything: the completed sources are screened and judged like any other edit.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import io
import keyword
import re
import tokenize

_BUILTINS = frozenset(dir(builtins))


def resolve_names(base: str, new: str) -> tuple[str, list[str]]:
    """`new` with each name it uses undefined (and `base` did not) replaced by the one in-scope name it
    stands for, and a note per replacement; `new` unchanged when there is none or the match is not unique."""
    try:
        new_tree = ast.parse(new)
        base_tree = ast.parse(base)
    except SyntaxError:
        return new, []
    already = {name for name, _scope, _nodes in _undefined(base_tree)}
    lines = new.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    notes: list[str] = []
    for name, scope, nodes in _undefined(new_tree):
        if name in already:
            continue
        match = _stand_in(name, scope)
        if match is None:
            continue
        notes.append(f"read `{name}` as `{match}` (no `{name}` is defined there)")
        edits += [(n.lineno, n.col_offset, n.end_col_offset or n.col_offset, match) for n in nodes]
    for lineno, start, end, text in sorted(edits, reverse=True):  # right to left keeps offsets valid
        raw = lines[lineno - 1].encode()
        lines[lineno - 1] = (raw[:start] + text.encode() + raw[end:]).decode()
    return "".join(lines), notes


def _undefined(tree: ast.Module) -> list[tuple[str, set[str], list[ast.Name]]]:
    """(name, the names in scope where it is read, the reading nodes) for each name a function reads but
    neither it, an enclosing function nor the module binds."""
    found: list[tuple[str, set[str], list[ast.Name]]] = []

    def visit(node: ast.AST, scope: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = scope | _bound(child)
                reads: dict[str, list[ast.Name]] = {}
                for n in _own_nodes(child):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        if n.id not in inner and n.id not in _BUILTINS:
                            reads.setdefault(n.id, []).append(n)
                found.extend((name, inner, nodes) for name, nodes in reads.items())
                visit(child, inner)
            else:
                visit(child, scope)

    visit(tree, _bound(tree))
    return found


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of `fn`'s body outside the functions nested in it (those are their own scope)."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _bound(scope: ast.AST) -> set[str]:
    """Names `scope` (the module or a function) binds itself: arguments, assignments, loop and `with`
    targets, imports, nested definitions and classes (not what those bind inside)."""
    names: set[str] = set()
    for node in _own_nodes(scope):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names |= set(node.names)
    return names


def _stand_in(name: str, scope: set[str]) -> str | None:
    """The one in-scope name `name` was written for: same letters in another case first, then a prefix or
    extension of it (`pad`/`padding`), then its initials (`KS`/`kernel_size`); None unless unique."""
    low = name.lower()
    tiers = [
        [c for c in scope if c.lower() == low],
        [c for c in scope if min(len(c), len(low)) >= 3 and c.lower() != low and _prefix(c.lower(), low)],
        [c for c in scope if _initials(c) == low or _initials(name) == c.lower()],
    ]
    for tier in tiers:
        if len(tier) == 1 and tier[0] != name:
            return tier[0]
        if tier:
            return None  # ambiguous: guessing between two names is not reading the answer
    return None


def _prefix(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def _initials(name: str) -> str:
    parts = [p for p in name.lower().split("_") if p]
    return "".join(p[0] for p in parts) if len(parts) >= 2 else ""


def parallel_edit(base: str, new: str) -> tuple[str, int] | None:
    """`new` with each edited line's unedited twins edited the same way (renamed), and how many twins; None
    when no edited line has one."""
    old_lines = base.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not ops or any(tag != "replace" or i2 - i1 != j2 - j1 for tag, i1, i2, j1, j2 in ops):
        return None  # only line-for-line rewrites have an unambiguous twin edit
    touched = {i for _, i1, i2, _, _ in ops for i in range(i1, i2)}
    functions = _function_spans(base)
    twins: dict[int, str] = {}  # base line index -> its edited text
    for _, i1, i2, j1, _ in ops:
        for offset in range(i2 - i1):
            i, j = i1 + offset, j1 + offset
            old_tokens = _tokens(old_lines[i])
            if old_tokens is None:
                continue
            lo, hi = next(((a, b) for a, b in functions if a <= i < b), (0, len(old_lines)))
            for k in range(lo, hi):
                if k in touched or k in twins:
                    continue
                renaming = _renaming(old_tokens, _tokens(old_lines[k]))
                if renaming:
                    twins[k] = _indent(old_lines[k]) + _rename(new_lines[j].lstrip(), renaming)
    if not twins:
        return None
    # New lines are placed by base index: the rewrite is line for line, so base index k is new index k.
    out = list(new_lines)
    for k, text in twins.items():
        out[k] = text if text.endswith("\n") or not old_lines[k].endswith("\n") else text + "\n"
    return "".join(out), len(twins)


def twins(a: str, b: str) -> bool:
    """Whether two lines are parallel: the same statement up to a one-to-one renaming of names (`H_out = (H
    - KS) // stride + 1` and `W_out = (W - KS) // stride + 1`), and not the same line."""
    return bool(_renaming(_tokens(a), _tokens(b)))


def _function_spans(source: str) -> list[tuple[int, int]]:
    """0-based [start, end) line spans of the innermost-first functions (a twin lives in the same one)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    spans = [
        (n.lineno - 1, int(n.end_lineno or n.lineno))
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    return sorted(spans, key=lambda s: s[1] - s[0])


def _tokens(line: str) -> list[tuple[int, str]] | None:
    """A line's code tokens (no comments or layout), None when it is not a whole statement on its own."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER, tokenize.INDENT}
    out = [(t.type, t.string) for t in toks if t.type not in skip]
    # One-token lines (`else:`, a bare name) have twins everywhere: no evidence of a parallel.
    return out if len(out) >= 3 else None


def _renaming(a: list[tuple[int, str]] | None, b: list[tuple[int, str]] | None) -> dict[str, str]:
    """The one-to-one renaming of names that turns token list `a` into `b` (empty when there is none, or when
    the lines are identical)."""
    if a is None or b is None or len(a) != len(b):
        return {}
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for (ta, sa), (tb, sb) in zip(a, b, strict=True):
        if ta != tb:
            return {}
        if sa == sb:
            if ta == tokenize.NAME and (forward.get(sa, sa) != sa or backward.get(sa, sa) != sa):
                return {}
            continue
        if ta != tokenize.NAME or keyword.iskeyword(sa) or keyword.iskeyword(sb):
            return {}
        if forward.setdefault(sa, sb) != sb or backward.setdefault(sb, sa) != sa:
            return {}
    return forward


def _rename(text: str, renaming: dict[str, str]) -> str:
    """`text` with the renaming applied as a simultaneous swap (a name and its twin trade places)."""
    swap = {**{v: k for k, v in renaming.items()}, **renaming}
    alternatives = "|".join(map(re.escape, sorted(swap, key=len, reverse=True)))
    pattern = re.compile(r"(?<!\w)(" + alternatives + r")\b")
    return pattern.sub(lambda m: swap[m.group(1)], text)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
