"""The parts of a model's edit, each on its own: a small model's rewrite of a line often holds the fix and
some noise beside it.

Asked to fill in `tl.store(y_ptr + row * stride_y + offs, inclusive, mask=mask)` of an exclusive scan, a
real 1.5B model wrote `tl.store(y_ptr + row * stride_y, inclusive - x)`: the fix (`inclusive - x`) with
the offsets and the mask dropped. Read as written the answer fails; its one right change alone passes.

An edit confined to one span of lines is split into its token-level changes (a name replaced, a term
added, an argument dropped). With two to `MAX_PARTS` changes, each change alone and (with three or more)
each leave-one-out set is offered as a candidate beside the answer as written. Nothing here decides: the
parts are screened and judged like any other edit, and a part the judge passes is still the model's own
change, a subset of what it wrote.
"""

from __future__ import annotations

import ast
import difflib
import re

MAX_PARTS = 5
"""An answer with more token-level changes than this is a rewrite, not a fix plus noise: not split."""

_TOKEN = re.compile(
    r"[A-Za-z_]\w*"
    r"|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    r"|\"[^\"\n]*\"|'[^'\n]*'"
    r"|\*\*|//|==|!=|<=|>=|<<|>>|->"
    r"|\S"
)


def answer_parts(base: str, new: str) -> list[tuple[str, str]]:
    """(source, what part of the answer it keeps) for each part of the edit `base` -> `new` worth trying
    alone; empty when the edit is one change or a rewrite."""
    old_lines, new_lines = base.splitlines(keepends=True), new.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
    changed = [op for op in ops if op[0] != "equal"]
    if not changed:
        return []
    i1, i2 = changed[0][1], changed[-1][2]
    j1, j2 = changed[0][3], changed[-1][4]
    old_text, new_text = "".join(old_lines[i1:i2]), "".join(new_lines[j1:j2])
    old_toks, new_toks = _tokens(old_text), _tokens(new_text)
    matcher = difflib.SequenceMatcher(
        None, [t for t, _, _ in old_toks], [t for t, _, _ in new_toks], autojunk=False
    )
    hunks = [(a1, a2, b1, b2) for tag, a1, a2, b1, b2 in matcher.get_opcodes() if tag != "equal"]
    if not 2 <= len(hunks) <= MAX_PARTS:
        return []
    subsets = [[h] for h in hunks]
    # A replacement of several tokens may be an addition and a removal side by side (`inclusive, mask=mask`
    # -> `inclusive - x`): each half is a part too. One name for another (`empty` -> `zeros`) has no halves.
    subsets += [
        [p]
        for a1, a2, b1, b2 in hunks
        if a2 > a1 and b2 > b1 and (a2 - a1) + (b2 - b1) >= 3
        for p in ((a1, a1, b1, b2), (a1, a2, b1, b1))
    ]
    if len(hunks) >= 3:
        subsets += [[h for h in hunks if h != skip] for skip in hunks]
    head, tail = "".join(old_lines[:i1]), "".join(old_lines[i2:])
    out: dict[str, str] = {}
    for subset in subsets:
        text = old_text
        # Right to left, so the offsets of the parts not yet applied stay valid.
        for part in sorted(subset, reverse=True):
            text = _apply(text, old_toks, new_text, new_toks, part)
        source = head + text + tail
        # A part placed against a name without a space glues two tokens into one (`zeros` + `empty`).
        expected = len(old_toks) + sum((b2 - b1) - (a2 - a1) for a1, a2, b1, b2 in subset)
        if source in (base, new) or len(_tokens(text)) != expected or not _parses(source):
            continue
        kept = "; ".join(_describe(old_text, old_toks, new_text, new_toks, part) for part in subset)
        out.setdefault(source, f" (part of the answer: {kept})")
    return list(out.items())


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _apply(
    text: str,
    old_toks: list[tuple[str, int, int]],
    new_text: str,
    new_toks: list[tuple[str, int, int]],
    part: tuple[int, int, int, int],
) -> str:
    """`text` (the old span, with only parts right of this one applied) with old tokens a1:a2 replaced by
    new tokens b1:b2, the spacing before them as the answer wrote it (a dropped `+ offs` takes its leading
    space with it)."""
    a1, a2, b1, b2 = part
    if a1 > 0:
        cut = old_toks[a1 - 1][2]
    else:
        cut = old_toks[0][1] if old_toks else 0
    end = old_toks[a2 - 1][2] if a2 > a1 else cut
    inserted = ""
    if b2 > b1:
        inserted = new_text[new_toks[b1 - 1][2] if b1 > 0 else new_toks[b1][1] : new_toks[b2 - 1][2]]
        if a2 == a1 and a1 == 0:
            inserted += " "
    return text[:cut] + inserted + text[end:]


def _describe(
    old_text: str,
    old_toks: list[tuple[str, int, int]],
    new_text: str,
    new_toks: list[tuple[str, int, int]],
    part: tuple[int, int, int, int],
) -> str:
    a1, a2, b1, b2 = part
    old = old_text[old_toks[a1][1] : old_toks[a2 - 1][2]] if a2 > a1 else ""
    new = new_text[new_toks[b1][1] : new_toks[b2 - 1][2]] if b2 > b1 else ""
    if not new:
        return f"drop `{_short(old)}`"
    if not old:
        return f"add `{_short(new)}`"
    return f"`{_short(old)}` -> `{_short(new)}`"


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True
