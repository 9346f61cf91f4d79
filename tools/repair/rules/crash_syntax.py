"""A crash rule for a candidate that is not valid Python: the prose and markdown around generated code.

Generations are answers, and answers come wrapped: a sentence before the code, an explanation after it, the
fences of a chat reply, a stray line of commentary between two functions, tabs mixed with spaces. Python
stops at the first such line (a SyntaxError at import: `compile_error`, class `import_error`) and nothing
else can be judged. This rule reads only the text. It finds the line Python rejects and offers the few ways
of removing what is not code: the fenced blocks alone, the paragraph holding the line, everything from that
paragraph on, the line alone, tabs expanded. Each is applied again while Python still rejects a line, and
offered only when the whole result parses. Whether what was removed held code, the judge decides, as for
every rule.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Iterator

import libcst as cst
from kernel_medic.tools.repair.rules.base import Edit, RuleContext, rule

MAX_ROUNDS = 24  # lines removed one after another before a way of mending is given up
_FENCE = re.compile(r"^\s*(```|~~~)")
_ENTRY = re.compile(r"^\s*class\s+ModelNew\b", re.M)
_STATEMENT = re.compile(r"^(?:import|from|def|class|if __name__)\b|^@")
Step = Callable[[list[str], int], list[str] | None]


def _error_line(source: str) -> int | None:
    """The 1-based line Python rejects, or None when the source parses (or cannot be read at all)."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return max(1, exc.lineno or 1)
    except ValueError:
        return None
    return None


def _paragraph(lines: list[str], i: int) -> tuple[int, int]:
    """[start, end) of the run of non-blank lines holding line index i."""
    start, end = i, i + 1
    while start > 0 and lines[start - 1].strip():
        start -= 1
    while end < len(lines) and lines[end].strip():
        end += 1
    return start, end


def _drop_paragraph(lines: list[str], i: int) -> list[str] | None:
    start, end = _paragraph(lines, i)
    return lines[:start] + lines[end:]


def _drop_tail(lines: list[str], i: int) -> list[str] | None:
    start, _ = _paragraph(lines, i)
    return lines[:start] if start > 0 else None


def _drop_to_statement(lines: list[str], i: int) -> list[str] | None:
    """Prose glued to code (no blank line): drop from the rejected line to the next top-level statement."""
    end = next((j for j in range(i + 1, len(lines)) if _STATEMENT.match(lines[j])), len(lines))
    return lines[:i] + lines[end:]


def _drop_line(lines: list[str], i: int) -> list[str] | None:
    return lines[:i] + lines[i + 1 :]


def _comment_line(lines: list[str], i: int) -> list[str] | None:
    line = lines[i]
    body = line.lstrip()
    if not body or body.startswith("#"):
        return None
    return [*lines[:i], f"{line[: len(line) - len(body)]}# {body}", *lines[i + 1 :]]


_STEPS: tuple[tuple[str, Step], ...] = (
    ("drop the paragraph Python rejects", _drop_paragraph),
    ("drop everything from the paragraph Python rejects on", _drop_tail),
    ("drop from the line Python rejects to the next top-level statement", _drop_to_statement),
    ("drop the line Python rejects", _drop_line),
    ("comment out the line Python rejects", _comment_line),
)


def _mend(source: str, step: Step) -> str | None:
    """`step` applied at each line Python rejects until the source parses; None if it never does."""
    for _ in range(MAX_ROUNDS):
        line = _error_line(source)
        if line is None:
            return source
        lines = source.splitlines(keepends=True)
        if not lines:
            return None
        new = step(lines, min(line, len(lines)) - 1)
        if new is None or new == lines:
            return None
        source = "".join(new)
    return None


def _fenced(source: str) -> list[str]:
    """The contents of the markdown code fences (an unclosed last fence runs to the end)."""
    blocks: list[str] = []
    current: list[str] = []
    inside = False
    for line in source.splitlines(keepends=True):
        if _FENCE.match(line):
            if inside:
                blocks.append("".join(current))
                current = []
            inside = not inside
        elif inside:
            current.append(line)
    if inside and current:
        blocks.append("".join(current))
    return [b for b in blocks if b.strip()]


def _starts(source: str) -> Iterator[tuple[str, str]]:
    """(what was done, text) to mend from: the source, its fenced code, fence lines removed, tabs expanded."""
    yield "", source
    blocks = _fenced(source)
    if blocks:
        yield "keep only the code in the markdown fences", "\n".join(blocks)
        if len(blocks) > 1:
            yield "keep only the longest fenced block", max(blocks, key=len)
        unfenced = "".join(ln for ln in source.splitlines(keepends=True) if not _FENCE.match(ln))
        yield "drop the markdown fence lines", unfenced
    dedented = textwrap.dedent(source)
    if dedented != source:
        yield "dedent the whole file", dedented
    if "\t" in source:
        for width in (4, 8):
            yield f"expand tabs to {width} columns", source.expandtabs(width)


@rule(
    "syntax_salvage",
    title="prose, markdown fences or mixed tabs around generated code (a SyntaxError at import)",
    bug_class="import_error",
    symptoms=("import_error", "compile_error"),
    per="text",
)
def syntax_salvage(source: str, context: RuleContext | None) -> Iterator[Edit]:
    line = _error_line(source)
    if line is None:
        return
    offered = {source}
    starts = list(_starts(source))
    # A start that parses as it is (the fenced code, the file dedented) first, then the line-by-line ways.
    ways = [(started, "", text) for started, text in starts if started and _error_line(text) is None]
    ways += [
        (started, what, mended)
        for started, text in starts
        for what, step in _STEPS
        if (mended := _mend(text, step)) is not None
    ]
    for started, what, mended in ways:
        lost_entry = _ENTRY.search(source) is not None and _ENTRY.search(mended) is None
        if mended in offered or not mended.strip() or lost_entry:
            continue  # a way that cut the entry point away removed code, not prose
        offered.add(mended)
        try:
            module = cst.parse_module(mended)
        except cst.ParserSyntaxError:
            continue
        yield Edit(module, line, "; then ".join(w for w in (started, what) if w) or "mend the syntax")
