"""The failure-pattern record and the seed library's data files.

Seed files (`vectordb/seeds/*.toml`) hold shared sources under `[references.NAME]` and `[kernels.NAME]`
(a correct candidate) and a `[[patterns]]` list. A pattern names its reference and its correct kernel
(`example_after`); `before` is a list of `[old, new]` replacements that inject the bug into that kernel,
each matching exactly once. Loading materialises full `example_before`/`example_after`/`reference` text.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from kernel_medic.vectordb.features import CATEGORIES

SEED_DIR = Path(__file__).parent / "seeds"


@dataclass
class Pattern:
    id: str
    title: str
    categories: list[str]
    bug_class: str
    symptoms: list[str]
    explanation: str
    fix: str
    example_before: str = ""
    example_after: str = ""
    reference: str = ""
    rules: list[str] = field(default_factory=list)
    provenance: str = "seed"
    times_retrieved: int = 0
    times_accepted: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pattern:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"pattern {data.get('id', '?')}: unknown field(s) {', '.join(sorted(unknown))}")
        missing = [n for n in ("id", "title", "categories", "bug_class", "symptoms") if n not in data]
        if missing:
            raise ValueError(f"pattern {data.get('id', '?')}: missing field(s) {', '.join(missing)}")
        pattern = cls(**data)
        bad = [c for c in pattern.categories if c not in CATEGORIES]
        if bad:
            raise ValueError(f"pattern {pattern.id}: unknown categor(y/ies) {', '.join(bad)}")
        return pattern

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def changes(self, limit: int = 4) -> list[list[str]]:
        """`[buggy, fixed]` line pairs between the example kernels: what the bug looks like in code. A buggy
        line is paired with the most similar line of its fixed group. A line the bug leaves out is given as
        `[line before it, that line + "\\n" + the missing line]`: only its neighbour can be pointed at."""
        before, after = self.example_before.splitlines(), self.example_after.splitlines()
        pairs: list[list[str]] = []
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            fixed = [line.strip() for line in after[j1:j2] if line.strip()]
            if tag == "insert" and fixed and i1 > 0 and before[i1 - 1].strip():
                pairs.append([before[i1 - 1].strip(), before[i1 - 1].strip() + "\n" + fixed[0]])
            if tag != "replace" or not fixed:
                continue
            for line in before[i1:i2]:
                if line.strip():
                    best = max(fixed, key=lambda f: difflib.SequenceMatcher(None, line.strip(), f).ratio())
                    pairs.append([line.strip(), best])
        return pairs[:limit]

    def search_text(self) -> str:
        """What gets embedded: the words a diagnosis or a user would use for this failure."""
        return (
            f"{self.title}. {self.explanation} Fix: {self.fix} "
            f"Bug class: {self.bug_class.replace('_', ' ')}. Operators: {', '.join(self.categories)}. "
            f"Symptoms: {', '.join(s.replace('_', ' ') for s in self.symptoms)}."
        )


def _apply_edits(source: str, edits: list[list[str]], where: str) -> str:
    for old, new in edits:
        count = source.count(old)
        if count != 1:
            raise ValueError(f"{where}: edit {old!r} matches {count} times (must match once)")
        source = source.replace(old, new)
    return source


def load_seed_file(path: Path) -> list[Pattern]:
    data = tomllib.loads(path.read_text())
    references = {k: v["source"] for k, v in data.get("references", {}).items()}
    kernels = {k: v["source"] for k, v in data.get("kernels", {}).items()}
    default_categories = [data["category"]] if "category" in data else []
    out = []
    for raw in data.get("patterns", []):
        raw = dict(raw)
        where = f"{path.name}:{raw.get('id', '?')}"
        ref_key, after_key = raw.pop("reference"), raw.pop("after")
        after = kernels[after_key]
        raw["example_after"] = _apply_edits(after, raw.pop("after_edits", []), where)
        raw["example_before"] = _apply_edits(raw["example_after"], raw.pop("before"), where)
        raw["reference"] = references[ref_key]
        raw.setdefault("categories", default_categories)
        out.append(Pattern.from_dict(raw))
    return out


def load_seeds(folder: Path = SEED_DIR) -> list[Pattern]:
    """Every seed pattern, in file then file-order; ids must be unique."""
    patterns: list[Pattern] = []
    files = sorted(folder.glob("*.toml"))
    if not files:  # an install without its seed files would otherwise open an empty knowledge base, silently
        raise ValueError(f"no seed files (*.toml) in {folder}")
    for path in files:
        patterns += load_seed_file(path)
    ids = [p.id for p in patterns]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"duplicate seed pattern id(s): {', '.join(dupes)}")
    return patterns
