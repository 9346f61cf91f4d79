"""The near-miss benchmark corpus: case folders with a reference, a near-miss candidate, its fix and metadata.

A case is a folder ``<category>_<NN>_<slug>/`` holding ``reference.py``, ``candidate.py``, ``fixed.py`` and
``meta.toml`` (see benchmarks/near_miss/README.md). Loading reads and validates text only; nothing runs.

An *imported* case (a generation taken from someone else's run: benchmarks/realworld, benchmarks/crashes,
``kmedic bench`` on an imported run) has a ``[source]`` table in its meta.toml saying where it came from.
Nobody wrote a fix for it, so ``fixed.py`` is optional and only ``category`` and ``description`` are
required; its category may also be ``other`` and its folder name is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

CATEGORIES: tuple[str, ...] = (
    "activation",
    "elementwise",
    "reduction",
    "normalization",
    "softmax_attention",
    "matmul",
    "convolution",
    "pooling",
    "loss",
    "scan_index",
)
CASE_FILES: tuple[str, ...] = ("reference.py", "candidate.py", "fixed.py", "meta.toml")
META_FILE = "meta.toml"
_META_KEYS = {"category", "bug_classes", "exposed_by", "lines_changed", "description", "two_bug"}
# Optional: true when the case was read while writing repair rules, so its repair rate is reported apart.
_OPTIONAL_KEYS = {"looked_at_for_rules"}
# An imported case: where it came from (repo, commit, file, record, model, ...) and what triage said of it.
_IMPORTED_KEYS = {"category", "description"}
_IMPORTED_OPTIONAL = _META_KEYS | _OPTIONAL_KEYS | {"source", "triage"}


@dataclass(frozen=True)
class CorpusCase:
    name: str
    path: Path
    category: str
    bug_classes: tuple[str, ...]
    exposed_by: tuple[str, ...]
    lines_changed: int
    description: str
    two_bug: bool
    looked_at: bool = False
    imported: bool = False


def _string_list(folder: Path, meta: dict[str, Any], key: str) -> tuple[str, ...]:
    value = meta[key]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{folder}: meta.toml: {key} must be a non-empty list of strings")
    return tuple(value)


def load_case(folder: Path) -> CorpusCase:
    """One case folder; ValueError (one line naming the folder) on a missing file or malformed meta.toml."""
    folder = Path(folder)
    meta = _read_meta(folder) if (folder / META_FILE).is_file() else None
    if meta is not None and isinstance(meta.get("source"), dict):
        return _imported_case(folder, meta)
    missing = [f for f in CASE_FILES if not (folder / f).is_file()]
    if missing or meta is None:
        raise ValueError(f"{folder}: missing {', '.join(missing)}")
    absent = sorted(_META_KEYS - set(meta))
    if absent:
        raise ValueError(f"{folder}: meta.toml: missing key(s) {', '.join(absent)}")
    unknown = sorted(set(meta) - _META_KEYS - _OPTIONAL_KEYS)
    if unknown:
        raise ValueError(f"{folder}: meta.toml: unknown key(s) {', '.join(unknown)}")
    category = meta["category"]
    if category not in CATEGORIES:
        raise ValueError(f"{folder}: meta.toml: category {category!r} is not one of {', '.join(CATEGORIES)}")
    if not folder.name.startswith(f"{category}_"):
        raise ValueError(f"{folder}: folder name must start with its category {category!r}")
    lines = meta["lines_changed"]
    if type(lines) is not int or lines < 1:
        raise ValueError(f"{folder}: meta.toml: lines_changed must be a positive integer, got {lines!r}")
    description = meta["description"]
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        raise ValueError(f"{folder}: meta.toml: description must be one non-empty line")
    for flag in ("two_bug", "looked_at_for_rules"):
        if not isinstance(meta.get(flag, False), bool):
            raise ValueError(f"{folder}: meta.toml: {flag} must be true or false")
    return CorpusCase(
        name=folder.name,
        path=folder,
        category=category,
        bug_classes=_string_list(folder, meta, "bug_classes"),
        exposed_by=_string_list(folder, meta, "exposed_by"),
        lines_changed=lines,
        description=description.strip(),
        two_bug=meta["two_bug"],
        looked_at=meta.get("looked_at_for_rules", False),
    )


def _read_meta(folder: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((folder / META_FILE).read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{folder}: meta.toml: invalid TOML: {first}") from None


def _imported_case(folder: Path, meta: dict[str, Any]) -> CorpusCase:
    missing = [f for f in ("reference.py", "candidate.py") if not (folder / f).is_file()]
    if missing:
        raise ValueError(f"{folder}: missing {', '.join(missing)}")
    absent = sorted(_IMPORTED_KEYS - set(meta))
    if absent:
        raise ValueError(f"{folder}: meta.toml: missing key(s) {', '.join(absent)}")
    unknown = sorted(set(meta) - _IMPORTED_OPTIONAL)
    if unknown:
        raise ValueError(f"{folder}: meta.toml: unknown key(s) {', '.join(unknown)}")
    category = meta["category"]
    if category not in (*CATEGORIES, "other"):
        allowed = ", ".join((*CATEGORIES, "other"))
        raise ValueError(f"{folder}: meta.toml: category {category!r} is not one of {allowed}")
    description = meta["description"]
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        raise ValueError(f"{folder}: meta.toml: description must be one non-empty line")
    looked_at = meta.get("looked_at_for_rules", False)
    if not isinstance(looked_at, bool):
        raise ValueError(f"{folder}: meta.toml: looked_at_for_rules must be true or false")
    bug_classes = meta.get("bug_classes", ["unknown"])
    return CorpusCase(
        name=folder.name,
        path=folder,
        category=category,
        bug_classes=tuple(bug_classes) if isinstance(bug_classes, list) and bug_classes else ("unknown",),
        exposed_by=tuple(meta.get("exposed_by", [])),
        lines_changed=int(meta.get("lines_changed", 0)),
        description=description.strip(),
        two_bug=bool(meta.get("two_bug", False)),
        looked_at=looked_at,
        imported=True,
    )


def load_corpus(root: Path) -> list[CorpusCase]:
    """Every case folder under `root` (subfolders not named ``.*`` or ``_*``), sorted by name."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: corpus folder not found")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    return [load_case(folder) for folder in folders]
