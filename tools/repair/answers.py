"""Reading an LLM's answer into at most one edit of the current source, whatever form the model chose.

Accepted, in order: SEARCH/REPLACE blocks (exact, then whitespace/indentation-tolerant but only on a unique
match); a unified diff (its hunks applied like SEARCH/REPLACE blocks, so the same uniqueness rule holds); a
corrected kernel or whole file in a code fence, diffed against the current source. Blocks that repeat the
instructions' own text (an echoed template or example) are set aside, not fatal. A fenced rewrite that
touches more than `max_fraction` of the source's lines is refused as regeneration. The parser never decides
success: it only says which source the answer proposes, or why it proposes none (in words the model can act
on), and the evaluator judges the result.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from dataclasses import dataclass, field

from kernel_medic.tools.repair.edits import (
    EditError,
    SearchReplace,
    apply_search_replace,
    changed_fraction,
    parse_search_replace,
)

_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```", re.S | re.M)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


@dataclass
class Answer:
    """What one reply proposes: a new source (and how it was read) or the reason there is none."""

    source: str | None
    form: str  # search_replace | search_replace_fuzzy | unified_diff | fenced_code | region | none
    refusal: str = ""  # one or two sentences for the model, empty when an edit was read
    notes: list[str] = field(default_factory=list)  # what was set aside on the way (echoed template, ...)
    changed_fraction: float = 0.0
    alternatives: list[str] = field(default_factory=list)  # other sources the same reply can be read as


def read_answer(text: str, source: str, instructions: str = "", max_fraction: float = 0.6) -> Answer:
    """The edit `text` proposes for `source`. `instructions` is the prompt text whose echo is ignored."""
    notes: list[str] = []
    problems: list[str] = []
    echoed = False

    blocks, parse_error = _blocks(text)
    if parse_error:
        problems.append(parse_error)
    real: list[SearchReplace] = []
    for block in blocks:
        # Only the SEARCH side can be an echo: a correct REPLACE may well appear in the prompt's hints.
        if _echo(block.search, source, instructions):
            echoed = True
            continue
        real.append(block)
    if echoed:
        notes.append("ignored SEARCH/REPLACE text copied from the instructions (template or example)")
    if real:
        try:
            new = apply_search_replace(source, [_partial_line(b, source) for b in real])
            exact = all("\n" + b.search in "\n" + source for b in real)  # whole lines, verbatim
            form = "search_replace" if exact else "search_replace_fuzzy"
            return Answer(new, form, notes=notes, changed_fraction=changed_fraction(source, new))
        except EditError as exc:
            problems.append(f"your SEARCH/REPLACE edit could not be applied: {exc}")

    diff_blocks = _diff_hunks(text)
    if diff_blocks:
        try:
            new = apply_search_replace(source, diff_blocks)
            return Answer(new, "unified_diff", notes=notes, changed_fraction=changed_fraction(source, new))
        except EditError as exc:
            problems.append(f"your diff could not be applied: {exc}")

    too_large: list[float] = []
    unchanged = False
    for code in reversed(_fences(text)):  # the last fence is usually the answer, earlier ones the question
        if _echo(code, source, instructions):
            echoed = True
            continue
        new = _merge_code(source, code)
        if new == source:
            unchanged = True
        if new is None or new == source:
            continue
        fraction = changed_fraction(source, new)
        if fraction > max_fraction:
            too_large.append(fraction)
            continue
        return Answer(new, "fenced_code", notes=notes, changed_fraction=fraction)
    if too_large:
        problems.append(
            f"your code rewrites {max(too_large):.0%} of the kernel's lines (limit {max_fraction:.0%}): "
            "that is a regeneration, not a repair; change only the lines with the bug"
        )
    if unchanged and not too_large:
        problems.append(
            "the code you gave is the current candidate unchanged (apart from comments or spacing), so the "
            "bug is still in it: change the lines that cause the failures listed under Symptoms"
        )
    if echoed:
        problems.insert(
            0,
            "you repeated the template/example text from the instructions instead of "
            "lines from the current candidate",
        )
    if not problems:
        problems.append(
            "no edit found: answer with SEARCH/REPLACE blocks (or the corrected kernel in one "
            "```python fence)"
        )
    return Answer(None, "none", refusal="; ".join(dict.fromkeys(problems)), notes=notes)


def read_region(text: str, source: str, first: int, last: int, max_fraction: float = 0.6) -> Answer:
    """The edit a reply to a region question proposes: its code replaces lines `first`..`last` (1-based).

    SEARCH/REPLACE blocks and diffs are read as usual (a model may still answer that way). Otherwise the last
    ```python fence (or a short reply without one) is the region rewritten; its indentation is re-based on the
    region's first line, keeping the reply's relative indentation. A small model often puts its fix somewhere
    else in the reply: an earlier fence (the first one a copy of the lines, the second the fix, or the other
    way round), a fence left open at the end, or a line quoted in its sentence (`xc = tl.where(...)`). Those
    readings that make an edit are `alternatives`; the first one becomes the answer when the last fence
    makes none.
    """
    blocks, _ = _blocks(text)
    if blocks or _diff_hunks(text):
        return read_answer(text, source, "", max_fraction)
    fences = _fences(text)
    readings = [(code, True) for code in reversed(fences)] + [(code, True) for code in _open_fence(text)]
    if not readings:
        readings.append((text.strip("\n"), False))
    readings += [(code, True) for code in _quoted_lines(text, source, first, last)]
    answers = [_region_edit(code, fenced, source, first, last, max_fraction) for code, fenced in readings]
    made = [a for a in answers if a.source is not None]
    if not made:
        return answers[0]
    found = list(dict.fromkeys(a.source for a in made if a.source is not None))
    made[0].alternatives = found[1:]
    return made[0]


def _region_edit(code: str, fenced: bool, source: str, first: int, last: int, max_fraction: float) -> Answer:
    """`code` put in place of lines `first`..`last`, or why it makes no edit there."""
    lines = source.splitlines(keepends=True)
    old = lines[first - 1 : last]
    reply = textwrap.dedent(code).strip("\n").splitlines()
    if not fenced and len(reply) > len(old) + REGION_SLACK:
        refusal = "no edit found: reply with the corrected lines in one ```python fence"
        return Answer(None, "none", refusal=refusal)
    if not any(line.strip() for line in reply):
        return Answer(None, "none", refusal="the reply held no code: write the corrected lines")
    indent = old[0][: len(old[0]) - len(old[0].lstrip())] if old else ""
    newline = "\n" if not old or old[-1].endswith("\n") else ""
    body = "\n".join(indent + line if line.strip() else "" for line in reply) + newline
    new = "".join(lines[: first - 1]) + body + "".join(lines[last:])
    # A comment ("# fixed") or spacing is no edit: verifying it would spend an iteration on the same code.
    if [c for c in map(_code_only, body.splitlines()) if c] == [c for c in map(_code_only, old) if c]:
        refusal = "the lines you wrote are the lines shown, unchanged: the bug is still in them"
        return Answer(None, "none", refusal=refusal)
    try:
        ast.parse(new)
    except SyntaxError as exc:  # prose, or lines that do not fit where they go
        refusal = f"your lines are not valid Python in place ({exc.msg}, line {exc.lineno}): write code only"
        return Answer(None, "none", refusal=refusal)
    fraction = changed_fraction(source, new)
    if fraction > max_fraction:
        refusal = "the reply is far longer than the lines shown: rewrite only those lines"
        return Answer(None, "none", refusal=refusal)
    return Answer(new, "region", changed_fraction=fraction)


def _open_fence(text: str) -> list[str]:
    """The code of a ```python fence the reply opened after its last closed one and never closed (a reply
    cut off, or a model that ends without the closing fence)."""
    tail = _FENCE.sub("", text)
    m = re.search(r"^```[ \t]*(?:python|py|python3)?[ \t]*\n(.*)\Z", tail, re.S | re.M)
    return [m.group(1)] if m and m.group(1).strip() else []


def _quoted_lines(text: str, source: str, first: int, last: int) -> list[str]:
    """Statements quoted in the reply's sentences (`xc = tl.where(mask, x - mean, 0.0)`) that read as a
    changed version of one region line (the same target assigned, value returned or function called, else
    mostly the same text), as the region with that line replaced."""
    region = source.splitlines()[first - 1 : last]
    prose = _FENCE.sub("", text)
    found: list[str] = []
    for span in re.findall(r"`([^`\n]+)`", prose):
        span = span.strip()
        role = _role(span)
        if role is None or any(_squash(line) == _squash(span) for line in region):
            continue
        scored = [
            (_role(line) == role, difflib.SequenceMatcher(None, _squash(line), _squash(span)).ratio(), i)
            for i, line in enumerate(region)
        ]
        same, ratio, best = max(scored)
        if not same and ratio < QUOTED_SIMILARITY:
            continue
        base = region[0][: len(region[0]) - len(region[0].lstrip())]
        indent = region[best][: len(region[best]) - len(region[best].lstrip())]
        edited = [*region[:best], indent + span, *region[best + 1 :]]
        found.append("\n".join(line[len(base) :] if line.startswith(base) else line for line in edited))
    return list(dict.fromkeys(found))


def _role(code: str) -> str | None:
    """What a one-line statement does, for matching a quoted line to the line it changes: the target it
    assigns, `return`, or the function it calls; None for anything else (prose, a bare name)."""
    try:
        [stmt] = ast.parse(code.strip()).body
    except (SyntaxError, ValueError):
        return None
    if isinstance(stmt, ast.Assign):
        return "=" + " ".join(ast.unparse(t) for t in stmt.targets)
    if isinstance(stmt, ast.AugAssign | ast.AnnAssign):
        return "=" + ast.unparse(stmt.target)
    if isinstance(stmt, ast.Return):
        return "return"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return "call " + ast.unparse(stmt.value.func)
    return None


QUOTED_SIMILARITY = 0.6
"""How alike a statement quoted in a sentence must be to a region line to be read as that line changed."""


REGION_SLACK = 4
"""Extra lines an unfenced region reply may hold over the region (an added line or two, not a file)."""


def _blocks(text: str) -> tuple[list[SearchReplace], str]:
    """Every well-formed SEARCH/REPLACE block, and the parser's complaint when some were malformed."""
    try:
        return parse_search_replace(text), ""
    except EditError as exc:
        if "no SEARCH/REPLACE block found" in str(exc):
            return [], ""
        # A malformed block must not hide well-formed ones elsewhere in the answer: parse block by block.
        found: list[SearchReplace] = []
        for chunk in re.split(r"(?m)^(?=\s*<{5,9}\s*SEARCH\s*$)", text):
            try:
                found += parse_search_replace(chunk)
            except EditError:
                continue
        return found, f"a SEARCH/REPLACE block was malformed ({exc})"


def _partial_line(block: SearchReplace, source: str) -> SearchReplace:
    """A one-line SEARCH that is only part of a line (`other=0.0)`) becomes that whole line, when the fragment
    occurs exactly once in the source and on no line by itself; otherwise the block is left as it is."""
    search, replace = block.search.strip(), block.replace.strip()
    if "\n" in search or "\n" in replace or not search or source.count(search) != 1:
        return block
    lines = source.splitlines()
    if any(line.strip() == search for line in lines):
        return block
    line = next(line for line in lines if search in line)
    return SearchReplace(line + "\n", line.replace(search, replace) + "\n")


def _squash(text: str) -> str:
    return " ".join(text.split())


def _echo(part: str, source: str, instructions: str) -> bool:
    """`part` is text from the instructions (template or example), not from the candidate being edited."""
    squashed = _squash(part)
    if not squashed or not instructions:
        return False
    return squashed in _squash(instructions) and squashed not in _squash(source)


def _diff_hunks(text: str) -> list[SearchReplace]:
    """A unified diff's hunks as SEARCH/REPLACE blocks (context plus removed lines -> context plus added)."""
    lines = text.splitlines()
    blocks: list[SearchReplace] = []
    i = 0
    while i < len(lines):
        if not _HUNK.match(lines[i]):
            i += 1
            continue
        old: list[str] = []
        new: list[str] = []
        i += 1
        while (
            i < len(lines) and not _HUNK.match(lines[i]) and not lines[i].startswith(("--- ", "+++ ", "```"))
        ):
            line = lines[i]
            if line.startswith("-"):
                old.append(line[1:])
            elif line.startswith("+"):
                new.append(line[1:])
            elif line.startswith(" ") or line == "":
                old.append(line[1:])
                new.append(line[1:])
            elif line.startswith("\\"):
                pass  # "\ No newline at end of file"
            else:
                break
            i += 1
        while old and new and not old[-1].strip() and not new[-1].strip():
            old.pop()
            new.pop()
        if any(s.strip() for s in old) and old != new:
            blocks.append(SearchReplace("".join(s + "\n" for s in old), "".join(s + "\n" for s in new)))
    return blocks


def _fences(text: str) -> list[str]:
    return [
        m.group(2) for m in _FENCE.finditer(text) if m.group(1).lower() in ("", "python", "py", "python3")
    ]


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def _span(node: ast.stmt) -> tuple[int, int]:
    """0-based [start, end) lines of a definition, decorators included."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    return start, int(node.end_lineno or node.lineno)


def _merge_code(source: str, code: str) -> str | None:
    """`source` with the fenced code's changes: a whole file replaces it; otherwise each top-level function or
    class the fence defines replaces the one of the same name. Cosmetic hunks (comments, blank lines,
    spacing) are reverted to the source's text, so only code changes count towards the edit's size."""
    try:
        fenced = ast.parse(code)
        current = ast.parse(source)
    except SyntaxError:
        return None
    new_defs, old_defs = _definitions(fenced), _definitions(current)
    shared = [name for name in new_defs if name in old_defs]
    if not shared:
        return None
    whole_file = set(old_defs) <= set(new_defs) and any(
        isinstance(n, ast.Import | ast.ImportFrom) for n in fenced.body
    )
    if whole_file:
        merged = code
    else:
        lines = source.splitlines(keepends=True)
        code_lines = code.splitlines(keepends=True)
        # Replace bottom-up so earlier spans keep their line numbers.
        for name in sorted(shared, key=lambda n: -old_defs[n].lineno):
            start, end = _span(old_defs[name])
            n_start, n_end = _span(new_defs[name])
            body = code_lines[n_start:n_end]
            if body and not body[-1].endswith("\n"):
                body[-1] += "\n"
            lines[start:end] = body
        merged = "".join(lines)
    return _revert_cosmetic(source, merged)


def _code_only(line: str) -> str:
    """A line without its comment and without any whitespace (quote-aware enough for kernel code)."""
    out, quote = [], ""
    for ch in line:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            break
        out.append(ch)
    return "".join("".join(out).split())


def _revert_cosmetic(before: str, after: str) -> str:
    import difflib

    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    if new and not new[-1].endswith("\n") and before.endswith("\n"):
        new[-1] += "\n"
    matcher = difflib.SequenceMatcher(
        None, [s.rstrip() for s in old], [s.rstrip() for s in new], autojunk=False
    )
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += old[i1:i2]
            continue
        old_code = [c for c in (_code_only(s) for s in old[i1:i2]) if c]
        new_code = [c for c in (_code_only(s) for s in new[j1:j2]) if c]
        out += old[i1:i2] if old_code == new_code else new[j1:j2]
    return "".join(out)


def describe_edit(before: str, after: str, form: str) -> str:
    """A patch's name, taken from the edit itself (never from the reply's prose)."""
    import difflib

    old = [s.rstrip() for s in before.splitlines()]
    new = [s.rstrip() for s in after.splitlines()]
    ops = [
        op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    if not ops:
        return f"llm {form}: no change"
    tag, i1, i2, j1, j2 = ops[0]
    removed = [s.strip() for s in old[i1:i2] if s.strip()]
    added = [s.strip() for s in new[j1:j2] if s.strip()]
    where = f"line {i1 + 1}"
    if len(ops) == 1 and len(removed) <= 1 and len(added) <= 1:
        if removed and added:
            old_text, new_text = _changed_part(removed[0], added[0])
        else:
            old_text = _short(removed[0]) if removed else "(nothing)"
            new_text = _short(added[0]) if added else "(removed)"
        return f"llm {form}, {where}: {old_text} -> {new_text}"
    changed = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in ops)
    return f"llm {form}: {changed} lines in {len(ops)} places from {where}"


def _changed_part(old: str, new: str, limit: int = 60) -> tuple[str, str]:
    """The differing middle of two lines, widened to word boundaries; whole lines when they are short."""
    if len(old) <= limit and len(new) <= limit:
        return old, new
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    while start > 0 and old[start - 1] not in " ,(":
        start -= 1
    while end > 0 and old[len(old) - end] not in " ,)":
        end -= 1
    return _short(old[start : len(old) - end]), _short(new[start : len(new) - end])


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
