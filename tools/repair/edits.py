"""Small source edits: SEARCH/REPLACE blocks (parsed, applied strictly), unified diffs and edit size.

An edit comes from an untrusted author (an LLM): every way it can be wrong raises ``EditError`` with one
line that can be fed back to that author. Nothing is applied on a guess: each SEARCH part must match
exactly one place, first verbatim and then ignoring trailing whitespace and a uniform indentation shift.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$")


@dataclass(frozen=True)
class SearchReplace:
    """Replace the lines ``search`` (which must occur exactly once) with ``replace``."""

    search: str
    replace: str


class EditError(ValueError):
    """One line saying what is wrong, suitable to feed back to the LLM."""


def parse_search_replace(text: str) -> list[SearchReplace]:
    """All SEARCH/REPLACE blocks in ``text`` (prose and ``` fences around them are ignored)."""
    blocks: list[SearchReplace] = []
    search: list[str] | None = None  # lines of the open block's SEARCH part
    replace: list[str] | None = None  # lines of its REPLACE part, once the divider was seen
    for line in text.splitlines():
        if search is None:
            if _SEARCH.match(line):
                search = []
            elif _REPLACE.match(line):
                n = len(blocks) + 1
                raise EditError(f"block {n}: '>>>>>>> REPLACE' without a '<<<<<<< SEARCH' before it")
            continue
        n = len(blocks) + 1
        if _SEARCH.match(line):
            raise EditError(f"block {n}: a new '<<<<<<< SEARCH' starts before this block's '>>>>>>> REPLACE'")
        if replace is None:
            if _DIVIDER.match(line):
                if not any(s.strip() for s in search):
                    raise EditError(f"block {n}: the SEARCH part is empty; copy the lines to replace")
                replace = []
            elif _REPLACE.match(line):
                raise EditError(f"block {n}: '>>>>>>> REPLACE' before the '=======' divider")
            else:
                search.append(line)
        elif _REPLACE.match(line):
            blocks.append(SearchReplace(_join(search), _join(replace)))
            search = replace = None
        else:
            replace.append(line)
    n = len(blocks) + 1
    if search is not None:
        missing = "'=======' and '>>>>>>> REPLACE'" if replace is None else "'>>>>>>> REPLACE'"
        raise EditError(f"block {n} is unterminated: {missing} missing")
    if not blocks:
        raise EditError(
            "no SEARCH/REPLACE block found; answer with '<<<<<<< SEARCH' ... '=======' ... "
            "'>>>>>>> REPLACE' blocks"
        )
    return blocks


def apply_search_replace(source: str, edits: Sequence[SearchReplace]) -> str:
    """``source`` with ``edits`` applied in order.

    EditError unless each SEARCH matches exactly once in the text so far and the result differs.
    """
    lines = source.splitlines(keepends=True)
    for n, edit in enumerate(edits, start=1):
        search = edit.search.splitlines()
        if not any(s.strip() for s in search):
            raise EditError(f"block {n}: the SEARCH part is empty; copy the lines to replace")
        replace = edit.replace.splitlines()
        start, shift = _locate(lines, search, n)
        end = start + len(search)
        new = [_shift_indent(r, shift) + "\n" for r in replace]
        if new and end == len(lines) and not lines[-1].endswith(("\n", "\r")):
            new[-1] = new[-1][:-1]  # the file had no final newline; keep it that way
        lines[start:end] = new
    result = "".join(lines)
    if result == source:
        raise EditError("the edit changes nothing")
    return result


def _locate(lines: list[str], search: list[str], n: int) -> tuple[int, int]:
    """(index of the single match, indentation shift to apply to the replacement)."""
    bare = [line.rstrip("\r\n") for line in lines]
    size = len(search)
    exact = [i for i in range(len(bare) - size + 1) if bare[i : i + size] == search]
    if len(exact) == 1:
        return exact[0], 0
    if len(exact) > 1:
        raise EditError(
            f"block {n}: the SEARCH text starting {_first(search)} occurs {len(exact)} times; "
            "add surrounding lines to make it unique"
        )
    wanted, search_indent = _normalise(search)
    loose: list[tuple[int, int]] = []
    for i in range(len(bare) - size + 1):
        found, indent = _normalise(bare[i : i + size])
        if found == wanted:
            loose.append((i, indent - search_indent))
    if len(loose) == 1:
        return loose[0]
    if len(loose) > 1:
        raise EditError(
            f"block {n}: the SEARCH text starting {_first(search)} occurs {len(loose)} times "
            "(ignoring whitespace); add surrounding lines to make it unique"
        )
    raise EditError(
        f"block {n}: the SEARCH text starting {_first(search)} is not in the candidate; "
        "copy the lines exactly from the current source"
    )


def _normalise(block: list[str]) -> tuple[list[str], int]:
    """Lines without trailing whitespace or their common indentation, and that indentation's width."""
    stripped = [line.rstrip() for line in block]
    widths = [len(s) - len(s.lstrip()) for s in stripped if s]
    common = min(widths, default=0)
    return [s[common:] for s in stripped], common


def _shift_indent(line: str, shift: int) -> str:
    if shift == 0 or not line.strip():
        return line
    if shift > 0:
        return " " * shift + line
    drop = min(-shift, len(line) - len(line.lstrip(" ")))
    return line[drop:]


def _first(search: list[str]) -> str:
    first = next(s for s in search if s.strip()).strip()
    return repr(first if len(first) <= 80 else first[:77] + "...")


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def unified_diff(before: str, after: str, path: str = "candidate.py") -> str:
    """A unified diff from ``before`` to ``after``; empty when they are equal."""
    diff = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""
    )
    text = "\n".join(diff)
    return text + "\n" if text else ""


def _opcodes(before: str, after: str) -> tuple[list[str], list[tuple[str, int, int, int, int]]]:
    old = [line.rstrip() for line in before.splitlines()]
    new = [line.rstrip() for line in after.splitlines()]
    # autojunk would treat frequent lines (blank, ')') as junk in files over 200 lines and inflate the diff
    return old, difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()


def diff_stats(before: str, after: str) -> dict[str, int]:
    """Lines added and removed (a modified line counts in both) and their sum; trailing whitespace ignored."""
    _, ops = _opcodes(before, after)
    added = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag in ("insert", "replace"))
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag in ("delete", "replace"))
    return {"added": added, "removed": removed, "changed_lines": added + removed}


def changed_fraction(before: str, after: str) -> float:
    """Fraction of ``before``'s non-blank lines that ``after`` removes or modifies (0.0 .. 1.0)."""
    old, ops = _opcodes(before, after)
    total = sum(1 for line in old if line.strip())
    if total == 0:
        return 0.0 if before.strip() == after.strip() else 1.0
    touched = sum(
        1 for tag, i1, i2, _, _ in ops if tag in ("delete", "replace") for line in old[i1:i2] if line.strip()
    )
    return touched / total
