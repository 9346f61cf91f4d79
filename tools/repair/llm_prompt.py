"""The patch prompt for an LLM, sized to its context: what helps a small model, trimmed by value.

The candidate kernel and the symptom summary are always kept. Symptoms are grouped by input variant and
deduplicated; hypotheses are deduplicated and only those with evidence are shown; knowledge-base patterns
only above a relevance threshold; the reference is cut down to the module the kernel implements (`Model`,
what it uses, the input builders), followed by PyTorch's definitions of the operators it calls. When the
prompt is over its token budget, the lowest-value sections go first: old failed attempts, instrumentation,
pattern text, definitions beyond the first, extra hypotheses, then the reference's body.
"""

from __future__ import annotations

import ast
import copy
import difflib
import json
import keyword
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from kernel_medic.tools.repair.answer_completion import twins
from kernel_medic.tools.repair.edit_space import statement_spans
from kernel_medic.tools.repair.fill_in import FILL_IN_TEMPLATES
from kernel_medic.tools.repair.llm import render_prompt
from kernel_medic.tools.repair.spec_checks import reference_scopes
from kernel_medic.tools.repair.torch_semantics import reference_semantics
from kernel_medic.tools.trace import source_hash

CHARS_PER_TOKEN = 3.2
"""A conservative characters-per-token ratio for code with BPE tokenizers (Qwen, Llama, GPT): an estimate
only used to size prompts; the server's own counts are what budgets spend."""


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def trim_reference(source: str) -> str:
    """The reference without what the kernel does not implement: imports, constants, `Model` and what it
    references, and the input builders. Unparseable sources are returned unchanged."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    defs = {
        n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    if "Model" not in defs:
        return source
    keep = {"Model", "get_inputs", "get_init_inputs"}
    frontier = ["Model"]
    while frontier:  # the transitive closure of top-level names Model uses
        node = defs.get(frontier.pop())
        if node is None:
            continue
        for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}:
            if name in defs and name not in keep:
                keep.add(name)
                frontier.append(name)
    lines = source.splitlines()
    drop: set[int] = set()
    for name, node in defs.items():
        if name not in keep:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
            drop.update(range(start, int(node.end_lineno or node.lineno)))
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip() + "\n"


VARIANTS = {
    "noncontig": "non-contiguous (strided) input tensors: the kernel must use their real strides, or the "
    "wrapper must make them contiguous",
    "x100": "inputs scaled by 100",
    "x1e-3": "inputs scaled by 0.001",
    "all_negative": "all inputs negative",
    "all_positive": "all inputs positive",
    "shifted_mean": "inputs shifted by +3",
    "heavy_tailed": "heavy-tailed inputs (a few very large values)",
    "integer_ties": "small integer inputs (many exact ties)",
    "large_positive": "large positive inputs (a float16 accumulator would overflow)",
}
"""What the evaluator's input variants are, for a model that has not seen the engine."""


def _gloss(names: list[str]) -> str:
    words = [f"{n} = {VARIANTS[n]}" for n in names if n in VARIANTS]
    if any(n.startswith("shape[") for n in names):
        words.append("shape[...] = the same problem at other sizes")
    return f" ({'; '.join(words)})" if words else ""


def symptom_lines(report: dict[str, Any]) -> list[str]:
    """Symptoms grouped by input variant: one line per kind of failure naming the variants it hit, one line
    for the variants that pass, then the report's other symptoms without per-case repeats."""
    groups: dict[tuple[str, str, tuple[str, ...]], list[dict[str, Any]]] = {}
    passing: list[str] = []
    for case in report.get("cases") or []:
        if case.get("verdict") == "pass":
            passing.append(str(case.get("name")))
            continue
        if case.get("counted") is False:
            continue
        kinds = tuple(sorted({str(r).split(":")[0] for r in case.get("relationships") or []}))
        key = (str(case.get("verdict")), str(case.get("pattern") or ""), kinds)
        groups.setdefault(key, []).append(case)
    lines = []
    for (verdict, pattern, _), cases in groups.items():
        names = ", ".join(str(c.get("name")) for c in cases) + _gloss([str(c.get("name")) for c in cases])
        parts = [verdict]
        fractions = [float(c.get("mismatch_fraction") or 0.0) for c in cases]
        if any(fractions):
            parts.append(f"{min(fractions):.1%}-{max(fractions):.1%} of elements wrong")
        if pattern and pattern != "none":
            parts.append(f"errors {pattern}")
        relations = sorted({str(r) for c in cases for r in c.get("relationships") or []})
        if relations:
            parts.append("; ".join(_relation_words(relations)))
        errors = sorted({str(c.get("error")) for c in cases if c.get("error")})
        if errors:
            parts.append("error: " + " | ".join(e[:160] for e in errors[:2]))
        lines.append(f"fails on {names}: " + ", ".join(parts))
    if passing:
        lines.append("passes on " + ", ".join(passing))
    per_case = re.compile(r"^\d+ of \d+ elements outside tolerance|^candidate = |^fails on .*; passes on ")
    others = [s for s in report.get("symptoms") or [] if not per_case.match(str(s))]
    lines += list(dict.fromkeys(str(s) for s in others))
    return lines or ["(none recorded)"]


def _relation_words(relations: list[str]) -> list[str]:
    """`constant_ratio:0.98, constant_ratio:0.99` -> `candidate ~ 0.98..0.99 x reference`."""
    by_kind: dict[str, list[str]] = {}
    for r in relations:
        kind, _, value = r.partition(":")
        by_kind.setdefault(kind, []).append(value)
    words = []
    for kind, values in by_kind.items():
        numbers = []
        for v in values:
            try:
                numbers.append(float(v))
            except ValueError:
                pass
        if numbers and kind == "constant_ratio":
            words.append(f"candidate ~ {min(numbers):.3g}..{max(numbers):.3g} x reference")
        elif numbers and kind == "constant_offset":
            words.append(f"candidate ~ reference + {min(numbers):.3g}..{max(numbers):.3g}")
        else:
            words.append(kind.replace("_", " ") + (f" ({', '.join(values[:3])})" if any(values) else ""))
    return words


def hypothesis_lines(
    hypotheses: Sequence[dict[str, Any]], limit: int = 3, fixes: dict[str, str] | None = None
) -> list[str]:
    """Deduplicated by bug class; only those with evidence (unless none has any: then the top one). Each says
    the known fix for its bug class in words (`fixes`, from the relevant patterns), next to the diagnosis: a
    small model acts on a hint where the bug is named, and misses it in a list further down."""
    fixes = fixes or {}
    seen: set[str] = set()
    lines = []
    backed = [h for h in hypotheses if h.get("evidence")] or list(hypotheses[:1])
    for h in backed:
        if h["bug_class"] in seen:
            continue
        seen.add(h["bug_class"])
        line = f"{h['bug_class']} (confidence {h.get('confidence')}"
        if h.get("evidence"):
            line += f"; evidence: {', '.join(_clip(str(e), 90) for e in h['evidence'][:4])}"
        if h.get("lines"):
            line += f"; around lines {h['lines'][0]}-{h['lines'][-1]}"
        line += ")"
        for key in ("summary", "explanation"):
            if isinstance(h.get(key), str) and h[key]:
                line += f": {h[key][:200]}"
                break
        if h["bug_class"] in fixes:
            line += f"\n  usual fix: {_clip(fixes[h['bug_class']], 240)}"
        lines.append(line)
        if len(lines) >= limit:
            break
    return lines or ["(no hypothesis)"]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def pattern_fixes(
    patterns: Sequence[dict[str, Any]], min_score: float, relative: float = 0.8
) -> dict[str, str]:
    """The first relevant pattern's fix (its first line) per bug class."""
    fixes: dict[str, str] = {}
    for p in _relevant(patterns, min_score, relative):
        fix = str(p.get("fix") or "").strip().splitlines()
        if fix and p.get("bug_class") and p["bug_class"] not in fixes:
            fixes[p["bug_class"]] = fix[0]
    return fixes


def _relevant(patterns: Sequence[dict[str, Any]], min_score: float, relative: float) -> list[dict[str, Any]]:
    scored = [p for p in patterns if isinstance(p.get("score"), int | float)]
    if not scored:
        return list(patterns)
    top = max(float(p["score"]) for p in scored)
    return [p for p in scored if float(p["score"]) >= max(min_score, relative * top)]


def pattern_lines(patterns: Sequence[dict[str, Any]], min_score: float, relative: float = 0.8) -> list[str]:
    """Patterns whose retrieval score is at least `min_score` and within `relative` of the best one.

    Patterns without a score (older traces) are all kept: there is nothing to rank them by."""
    relevant = _relevant(patterns, min_score, relative)
    return [f"{p['title']} [{p['bug_class']}]: {p['fix']}" for p in relevant[:3]] or ["(none relevant)"]


ANCHOR_SIMILARITY = 0.7
"""How alike (difflib ratio, whitespace-normalised) a candidate line and a pattern's buggy line must be."""
ANCHOR_OMISSION_SIMILARITY = 0.9
"""The same for a bug that only leaves something out of the fixed line (it has no tokens of its own)."""
ANCHOR_CONTEXT_SIMILARITY = 0.5
"""The same for the line a missing line follows (only its neighbour can be pointed at)."""
_TOKEN = re.compile(r"\w+|[^\s\w]")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _looks_like_bug(code: str, buggy: str, fixed: str) -> float:
    """How alike `code` is to `buggy`, or 0 when it is not that bug: it must hold what only the buggy form
    has, lack part of what only the fixed form has (a line in the fixed form never matches), and be more
    alike the buggy form than the fixed one. A bug that only leaves something out has no tokens of its own
    to look for, so it needs a closer match."""
    tokens, bad, good = (set(_TOKEN.findall(t)) for t in (code, buggy, fixed))
    if not bad - good <= tokens or (good - bad and good - bad <= tokens):
        return 0.0
    code, buggy, fixed = (_value_of(t) for t in (code, " ".join(buggy.split()), " ".join(fixed.split())))
    alike = difflib.SequenceMatcher(None, buggy, code).ratio()
    if alike <= difflib.SequenceMatcher(None, fixed, code).ratio():
        return 0.0
    return alike if alike >= (ANCHOR_SIMILARITY if bad - good else ANCHOR_OMISSION_SIMILARITY) else 0.0


_FIXED_NAMES = frozenset(keyword.kwlist) | {"tl", "triton", "torch", "self", "math", "nn", "F"}


def _renaming(pattern_line: str, code_line: str) -> dict[str, str]:
    """Pattern names -> the candidate's names for the same roles, from two lines that look alike: the
    identifiers standing one for one where the token sequences differ (`x = tl.load(...)` against `row =
    tl.load(...)`). A small model copies a pattern's fix as written, with names its kernel does not have.
    Attributes (`tl.load` against `tl.store`) and names that would map two ways are left alone."""
    a, b = _TOKEN.findall(" ".join(pattern_line.split())), _TOKEN.findall(" ".join(code_line.split()))
    pairs: dict[str, set[str]] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        # An equal stretch counts too: a name kept in one place and changed in another is ambiguous.
        if tag not in ("replace", "equal") or i2 - i1 != j2 - j1:
            continue
        for k in range(i2 - i1):
            x, y = a[i1 + k], b[j1 + k]
            attribute = (i1 + k > 0 and a[i1 + k - 1] == ".") or (j1 + k > 0 and b[j1 + k - 1] == ".")
            if _NAME.fullmatch(x) and _NAME.fullmatch(y) and not attribute and not {x, y} & _FIXED_NAMES:
                pairs.setdefault(x, set()).add(y)
    targets = [next(iter(ys)) for ys in pairs.values() if len(ys) == 1]
    return {
        x: next(iter(ys))
        for x, ys in pairs.items()
        if len(ys) == 1 and targets.count(next(iter(ys))) == 1 and x != next(iter(ys))
    }


def _renamed(code: str, names: dict[str, str]) -> str:
    """`code` with every whole identifier of `names` replaced at once (a swap stays a swap)."""
    if not names:
        return code
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: names.get(m.group(0), m.group(0)), code)


def _renamed_code_spans(text: str, names: dict[str, str]) -> str:
    """The backquoted code in a pattern's prose renamed; its words are left alone."""
    return re.sub(r"`([^`]+)`", lambda m: f"`{_renamed(m.group(1), names)}`", text) if names else text


def _value_of(line: str) -> str:
    """A plain assignment's right-hand side (kernels name their temporaries differently), else the line."""
    match = re.match(r"^[A-Za-z_][\w.]*\s*=(?!=)\s*(.+)$", line)
    return match.group(1) if match else line


@dataclass(frozen=True)
class Anchor:
    """A candidate line that looks like a retrieved pattern's bug: lines `first`..`last` (1-based) hold it
    (the line itself, and for a missing line also the line after the one it should follow)."""

    first: int
    last: int
    note: str  # the line, the pattern's title and its fix in words the model can act on


def anchor_lines(
    source: str, patterns: Sequence[dict[str, Any]], limit: int = 3, tried: Collection[str] = ()
) -> list[str]:
    """The notes of `anchors`: what the prompt's "Lines that look like a known bug" section lists."""
    return [a.note for a in anchors(source, patterns, limit, tried)]


def anchors(
    source: str, patterns: Sequence[dict[str, Any]], limit: int = 3, tried: Collection[str] = ()
) -> list[Anchor]:
    """Candidate lines that look like a retrieved pattern's buggy line, with the pattern's fix in code. A
    small model acts on a named line; a pattern in words it rarely maps to the code in front of it. A bug
    that leaves a line out (the pair's fixed side adds one) is pointed at through the line it follows, and
    only when the missing line is nowhere in the candidate. A line whose pattern fix, made as the pattern
    makes it, gives a version already tried (`tried`: source hashes) is not pointed at again: the model
    would only repeat it."""
    lines = source.splitlines()
    norm = [" ".join(line.split()) for line in lines]
    found: list[Anchor] = []
    used: set[int] = set()
    for p in patterns:
        for buggy, fixed in p.get("changes") or []:
            missing = fixed[len(buggy) + 1 :] if fixed.startswith(buggy + "\n") else ""
            if missing and " ".join(missing.split()) in norm:
                continue
            scored = [
                (_follows(code, buggy) if missing else _looks_like_bug(code, buggy, fixed), i)
                for i, code in enumerate(norm)
                if code and not code.startswith("#") and i not in used
            ]
            alike, i = max(scored, default=(0.0, -1))
            if alike <= 0:
                continue
            # The pattern's fix in the candidate's own names (its line and the pattern's stand one for one).
            names = _renaming(buggy, lines[i])
            buggy, fixed, missing = (_renamed(t, names) for t in (buggy, fixed, missing))
            if tried and source_hash(_with_fix(lines, i, buggy, fixed, missing)) in tried:
                continue
            used.add(i)
            if missing:
                fix = f"the fix adds `{_clip(missing, 120)}` after a line like `{_clip(buggy, 120)}`"
            else:
                fix = f"buggy form `{_clip(buggy, 120)}`, correct form `{_clip(fixed, 120)}`"
            words = _renamed_code_spans(str(p.get("fix") or ""), names)
            note = (
                f"line {i + 1} `{_clip(lines[i].strip(), 120)}` looks like the known bug "
                f"\"{p.get('title')}\" ({fix}). {_clip(words, 200)}"
            )
            # A missing line goes after this one: the region holds the next line too, the slot it fills.
            last = next((j for j in range(i + 1, len(lines)) if norm[j]), i) if missing else i
            found.append(Anchor(i + 1, last + 1, note))
            if len(found) >= limit:
                return found
    return found


def evidence_anchors(
    source: str,
    hypotheses: Sequence[dict[str, Any]],
    report: dict[str, Any],
    ranked_lines: Sequence[int] = (),
    limit: int = 3,
) -> list[Anchor]:
    """Statements the evidence points at, for the region question when no known bug anchors a line: the
    lines of evidence-backed hypotheses (a static feature of the bug class the report supports: rarely
    wrong where there is one), then the localiser's most suspect statements (`ranked_lines`: report cues
    and agreement with the reference). Each is its whole statement (a multi-line call is asked about
    whole); the note says why it is suspect and what fails. No pattern's fix: one retrieved for another
    operator of the same bug class misleads a small model more than it helps."""
    lines = source.splitlines()
    spans = statement_spans(source)
    symptoms = [s for s in symptom_lines(report) if not s.startswith("passes on")][:2]
    failing = f"What fails: {'; '.join(_clip(s, 200) for s in symptoms)}." if symptoms else ""
    picks: list[tuple[int, str]] = []
    for h in hypotheses:
        location = str(h.get("location") or "")
        if h.get("evidence") and re.fullmatch(r".+:\d+", location):
            why = f"the diagnosis suspects {h['bug_class'].replace('_', ' ')} here"
            picks.append((int(location.rsplit(":", 1)[1]), why))
    # Why the evidence points at a line, where the localiser can say (a model asked about `c = offs % C` told
    # that the values it pairs are right and their pairing is not has something to act on).
    why_ranked: dict[int, str] = getattr(ranked_lines, "reasons", {})  # localise.Suspects
    ranked = "the localiser ranks this statement most suspect"
    picks += [(line, why_ranked.get(line) or ranked) for line in ranked_lines]
    found: list[Anchor] = []
    for line, why in picks:
        first, last = next(((lo, hi) for lo, hi in spans if lo <= line <= hi), (line, line))
        if not 1 <= first <= last <= len(lines) or any(a.first == first for a in found):
            continue
        code = " ".join(" ".join(lines[first - 1 : last]).split())
        span = f"line {first}" if first == last else f"lines {first}-{last}"
        found.append(Anchor(first, last, f"{span} `{_clip(code, 160)}`: {why}. {failing}".strip()))
        if len(found) >= limit:
            break
    return found


def reference_model(source: str, max_lines: int = 40) -> str:
    """The reference's `Model` class, what the kernel must compute (at most `max_lines` lines), else the
    trimmed reference: a model asked about a few kernel lines cannot know the intended operator otherwise."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "\n".join(source.splitlines()[:max_lines])
    scopes = reference_scopes(tree)
    if not scopes:
        lines = trim_reference(source).splitlines()
    else:
        # A TritonBench Model only calls a function holding the operator: shown before it, docstrings
        # dropped when they would push the computation out of the window.
        texts = [ast.get_source_segment(source, n) or "" for n in [*scopes[1:][::-1], scopes[0]]]
        if sum(len(t.splitlines()) + 1 for t in texts) > max_lines:
            texts = [*(ast.unparse(_undocumented(n)) for n in scopes[1:][::-1]), texts[-1]]
        lines = "\n\n".join(texts).splitlines()
    return "\n".join(lines[:max_lines] + (["    ..."] if len(lines) > max_lines else []))


def _undocumented(fn: ast.AST) -> ast.AST:
    body = getattr(fn, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
        fn = copy.copy(fn)
        fn.body = body[1:]  # type: ignore[attr-defined]
    return fn


def with_twins(source: str, anchor: Anchor) -> Anchor:
    """`anchor` widened to the lines next to it that are its lines' twins (the same statement up to a
    renaming: `H_out` and `W_out`). Shown one of two parallel lines, a small model copies the other: asked
    to fill in `H_out` with the same bug in `W_out` right below, a real 1.5B model wrote the bug back."""
    lines = source.splitlines()
    region = lines[anchor.first - 1 : anchor.last]
    first, last = anchor.first, anchor.last
    while first > 1 and any(twins(lines[first - 2], line) for line in region):
        first -= 1
    while last < len(lines) and any(twins(lines[last], line) for line in region):
        last += 1
    return anchor if (first, last) == (anchor.first, anchor.last) else Anchor(first, last, anchor.note)


def fill_in_prompt(family: str, source: str, anchor: Anchor, reference_source: str = "") -> str:
    """A fill-in-the-middle question about `anchor`'s lines: the reference as another file of the repository,
    then the kernel file with those lines left out for the model to write. A small code model asked in chat
    about lines it can see mostly gives them back unchanged (a real 1.5B model: 48 of 63 answers on the
    true bug lines); not shown the lines, it writes what the code around them and the reference call for
    (7 of 63 unchanged; RESULTS round 41)."""
    lines = source.splitlines(keepends=True)
    return FILL_IN_TEMPLATES[family].format(
        reference=trim_reference(reference_source).rstrip(),
        prefix="".join(lines[: anchor.first - 1]),
        suffix="".join(lines[anchor.last :]),
    )


def fill_in_reply(text: str, anchor: Anchor) -> str:
    """A fill-in completion as a region answer: its first lines, as many as the region has, in a fence. An
    instruct model does not end the middle where the hole ends; it goes on into code of its own."""
    lines = text.split("\n")
    # A comment or blank line before the code is the model's preamble, not one of the region's lines.
    start = next((i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("#")), 0)
    kept = lines[start : start + anchor.last - anchor.first + 1]
    return "```python\n" + "\n".join(kept) + "\n```" if any(x.strip() for x in kept) else ""


def _with_fix(lines: list[str], i: int, buggy: str, fixed: str, missing: str) -> str:
    """The source with the pattern's fix made at line `i` (0-based): the missing line added after it at the
    next line's indentation, or the line in the fixed form at its own indentation."""
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    if missing:
        after = next((x for x in lines[i + 1 :] if x.strip()), lines[i])
        inner = after[: len(after) - len(after.lstrip())]
        new = [*lines[: i + 1], *(inner + m.strip() for m in missing.splitlines()), *lines[i + 1 :]]
    else:
        new = [*lines[:i], *(indent + f.strip() for f in fixed.splitlines()), *lines[i + 1 :]]
    return "\n".join(new) + "\n"


def region_messages(
    problem_name: str, source: str, anchor: Anchor, reference_source: str = "", reasoned: bool = False
) -> list[dict[str, str]]:
    """A short, self-contained question about one anchored region, with the reference's `Model` (what the
    kernel must compute): for a small model that gave the file back unchanged although the long prompt
    named the line. It reads a few lines well where it skims a file. `reasoned` asks for a sentence naming
    the mistake before the lines: asked for the lines alone, a real 1.5B model gave half of them back
    unchanged; having said what is wrong, it rarely did (4 of 30)."""
    region = "\n".join(source.splitlines()[anchor.first - 1 : anchor.last])
    span = f"line {anchor.first}" if anchor.first == anchor.last else f"lines {anchor.first}-{anchor.last}"
    definitions = reference_semantics(reference_source, limit=2)
    semantics = (
        f"What PyTorch defines these calls to compute:\n{_bullets(definitions)}\n\n" if definitions else ""
    )
    system = render_prompt("region_reasoned_system" if reasoned else "region_system")
    return [
        {"role": "system", "content": system},
        {
            "role": "user",
            "content": render_prompt(
                "region_user",
                problem_name=problem_name,
                reference=reference_model(reference_source),
                semantics=semantics,
                span=span,
                region=region,
                note=anchor.note,
                ask=render_prompt("region_ask_reasoned" if reasoned else "region_ask").strip(),
            ),
        },
    ]


def _follows(code: str, context: str) -> float:
    """How alike `code` is to the line a missing line follows (signatures differ in annotations)."""
    alike = difflib.SequenceMatcher(None, " ".join(context.split()), code).ratio()
    return alike if alike >= ANCHOR_CONTEXT_SIMILARITY else 0.0


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def patch_messages(
    request: Any, feedback: str, budget_tokens: int, min_pattern_score: float
) -> tuple[list[dict[str, str]], list[str]]:
    """(system + user messages within `budget_tokens`, names of the sections trimmed to fit)."""
    report = request.report
    failed = [
        f"{a.get('description', '')}: {a.get('verdict')} (score {a.get('score')})\n{a.get('diff', '')}"
        for a in request.failed_attempts[-4:]
    ]
    fixes = pattern_fixes(request.patterns, min_pattern_score)
    definitions = reference_semantics(request.reference_source)
    tried = request.seen_hashes
    fields: dict[str, Any] = {
        "problem_name": request.problem_name,
        "reference_source": trim_reference(request.reference_source),
        "semantics": _bullets(definitions) or "- (none listed)",
        "candidate_source": request.source,
        "verdict": report.get("verdict", "unknown"),
        "score": report.get("score", 0.0),
        "symptoms": _bullets(symptom_lines(report)),
        "diagnosis": _bullets(hypothesis_lines(request.hypotheses, fixes=fixes)),
        "anchors": _bullets(anchor_lines(request.source, request.patterns, tried=tried)) or "- (none)",
        "patterns": _bullets(pattern_lines(request.patterns, min_pattern_score)),
        "instrumentation": _bullets([json.dumps(f, sort_keys=True) for f in request.instrumentation[-3:]])
        or "- (none yet)",
        "failed_attempts": _bullets(failed) or "- (none)",
        "feedback": feedback or "(none)",
    }
    system = render_prompt("patch_system")
    trimmed: list[str] = []
    # Lowest value first. Each step shrinks one section; the kernel and the symptoms are never touched.
    steps: list[tuple[str, Any]] = [
        ("failed_attempts", lambda: _bullets(failed[-1:]) if len(failed) > 1 else "- (trimmed)"),
        ("failed_attempts", lambda: "- (trimmed to fit the prompt budget)"),
        ("instrumentation", lambda: "- (trimmed to fit the prompt budget)"),
        ("patterns", lambda: _bullets(pattern_lines(request.patterns, min_pattern_score)[:1])),
        ("patterns", lambda: "- (trimmed to fit the prompt budget)"),
        ("semantics", lambda: _bullets(definitions[:1]) or "- (none)"),
        ("anchors", lambda: _bullets(anchor_lines(request.source, request.patterns, 1, tried)) or "- (none)"),
        ("diagnosis", lambda: _bullets(hypothesis_lines(request.hypotheses, limit=1, fixes=fixes))),
        ("reference_source", lambda: _signature_only(fields["reference_source"])),
    ]
    while True:
        user = render_prompt("patch_user", **fields)
        if estimate_tokens(system + user) <= budget_tokens or not steps:
            break
        name, shrink = steps.pop(0)
        fields[name] = shrink()
        trimmed.append(name)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return messages, list(dict.fromkeys(trimmed))


def _signature_only(reference: str) -> str:
    """The reference's `forward` and input builders only: the last resort for a tight budget."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return reference[:1500]
    keep: list[str] = []
    lines = reference.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in ("forward", "get_inputs", "get_init_inputs"):
            keep += lines[node.lineno - 1 : int(node.end_lineno or node.lineno)]
    return "\n".join(keep) or reference[:1500]
