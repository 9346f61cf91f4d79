"""The knowledge base: failure patterns in a persistent Chroma collection, searchable by meaning and symptoms.

Ranking (documented weights): score = 0.55 * cosine similarity(query text, pattern text)
                                    + 0.35 * Jaccard(query symptoms, pattern symptoms)
                                    + 0.10 * Jaccard(query code features, pattern example's code features).
Symptom overlap is what the evaluator measured, so it weighs heavily; the text carries the diagnosis.
With a category, candidates come from a metadata-filtered query; the unfiltered nearest few still compete
with their score multiplied by 0.85 (the category is inferred and can be wrong).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kernel_medic.tools.paths import data_dir
from kernel_medic.vectordb.embedding import MiniLMEmbedding, embed
from kernel_medic.vectordb.features import CATEGORIES, code_features
from kernel_medic.vectordb.pattern import Pattern, load_seeds

COLLECTION = "failure_patterns"
W_TEXT, W_SYMPTOMS, W_FEATURES = 0.55, 0.35, 0.10
MIN_FILTERED = 3  # fewer category hits than this: search without the category filter
OFF_CATEGORY = 0.85  # score factor for patterns outside the query's (inferred) category

T = TypeVar("T")


@dataclass
class RetrievalQuery:
    text: str = ""
    symptoms: list[str] = field(default_factory=list)
    category: str | None = None
    code_features: list[str] = field(default_factory=list)

    def embed_text(self) -> str:
        parts = [self.text]
        if self.symptoms:
            parts.append("Symptoms: " + ", ".join(s.replace("_", " ") for s in self.symptoms) + ".")
        if self.category:
            parts.append(f"Operators: {self.category}.")
        return " ".join(p for p in parts if p)


def default_path() -> Path:
    """KMEDIC_KB_PATH, else `<data dir>/kb`."""
    if os.environ.get("KMEDIC_KB_PATH"):
        return Path(os.environ["KMEDIC_KB_PATH"])
    return data_dir() / "kb"


def _jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def _content_hash(p: Pattern) -> str:
    """What a seed file controls: everything but the usage counters."""
    content = {k: v for k, v in p.to_dict().items() if k not in ("times_retrieved", "times_accepted")}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


_PROCESS_LOCK = threading.Lock()


def _retry(fn: Callable[[], T], attempts: int = 8, lock_dir: Path | None = None) -> T:
    # Chroma's persistent client is not safe for several processes at once (batch and Ray workers share one
    # store): every access takes an exclusive file lock on the store, and "locked" errors are retried.
    for i in range(attempts):
        try:
            if lock_dir is None:
                return fn()
            with _PROCESS_LOCK, open(lock_dir / ".kmedic.lock", "a") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    return fn()
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)
        except Exception as exc:  # noqa: BLE001 - chromadb wraps sqlite errors in several types
            if "locked" not in str(exc).lower() or i == attempts - 1:
                raise
            time.sleep(0.05 * (i + 1))
    raise AssertionError("unreachable")


def _stale(exc: Exception) -> bool:
    """Whether Chroma failed because its in-memory vector index missed records another process wrote."""
    return "error finding id" in str(exc).lower()


class KnowledgeBase:
    def _do(self, fn: Callable[[], T]) -> T:
        try:
            return _retry(fn, lock_dir=self.path)
        except Exception as exc:  # noqa: BLE001 - see _stale
            if not _stale(exc):
                raise
            # Another process (a second kmedic, a batch or Ray worker) added patterns since this client loaded
            # the index: the records are on disk, only this process's copy is behind. Reload it and retry.
            with _PROCESS_LOCK:  # no other thread is inside the client while it is replaced
                self._open(file_lock=False)
            return _retry(fn, lock_dir=self.path)

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.path.mkdir(parents=True, exist_ok=True)
        self._client: Any = None
        self._open()

    def _open(self, file_lock: bool = True) -> None:
        import chromadb
        from chromadb.config import Settings

        if self._client is not None:
            self._client.close()  # the last reference: Chroma drops the cached system, so the index reloads
        self._client = chromadb.PersistentClient(
            path=str(self.path), settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
        self._col = _retry(
            lambda: self._client.get_or_create_collection(
                COLLECTION, embedding_function=MiniLMEmbedding(), metadata={"hnsw:space": "cosine"}
            ),
            lock_dir=self.path if file_lock else None,
        )

    # -- writing ------------------------------------------------------------------------------------------

    def _metadata(self, p: Pattern) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "title": p.title,
            "bug_class": p.bug_class,
            "categories": ",".join(p.categories),
            "symptoms": json.dumps(p.symptoms),
            "rules": json.dumps(p.rules),
            "features": json.dumps(code_features(p.example_before)),
            "provenance": p.provenance,
            "distilled": p.provenance != "seed",
            "times_retrieved": p.times_retrieved,
            "times_accepted": p.times_accepted,
            "content_hash": _content_hash(p),
        }
        for c in CATEGORIES:
            meta[f"cat_{c}"] = c in p.categories  # lists can't be filtered on; one flag per category can
        return meta

    def _upsert(self, patterns: list[Pattern]) -> None:
        if not patterns:
            return
        texts = [p.search_text() for p in patterns]
        self._do(
            lambda: self._col.upsert(
                ids=[p.id for p in patterns],
                documents=[p.to_json() for p in patterns],
                embeddings=embed(texts),  # type: ignore[arg-type]
                metadatas=[self._metadata(p) for p in patterns],  # type: ignore[misc]
            )
        )

    def add(self, pattern: Pattern | dict[str, Any]) -> Pattern:
        p = pattern if isinstance(pattern, Pattern) else Pattern.from_dict(pattern)
        self._upsert([p])
        return p

    def ensure_seeded(self, folder: Path | None = None) -> int:
        """Upsert the seed patterns (default: the shipped ones) that are new or changed; returns how many.

        Counters survive a changed seed: only the content is replaced.
        """
        seeds = load_seeds(folder) if folder is not None else load_seeds()
        existing = self._do(lambda: self._col.get(ids=[p.id for p in seeds], include=["metadatas"]))
        known = {i: m for i, m in zip(existing["ids"], existing["metadatas"] or [], strict=True)}
        changed = []
        for p in seeds:
            meta = known.get(p.id)
            if meta is not None:
                p.times_retrieved = int(meta.get("times_retrieved", 0))
                p.times_accepted = int(meta.get("times_accepted", 0))
                p.provenance = str(meta.get("provenance", p.provenance))
            if meta is None or meta.get("content_hash") != _content_hash(p):
                changed.append(p)
        self._upsert(changed)
        return len(changed)

    def _bump(self, ids: Iterable[str], counter: str) -> None:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return

        def run() -> None:
            got = self._col.get(ids=ids, include=["metadatas"])
            metas = []
            for meta in got["metadatas"] or []:
                meta = dict(meta)
                meta[counter] = int(meta.get(counter, 0)) + 1
                metas.append(meta)
            if got["ids"]:
                self._col.update(ids=got["ids"], metadatas=metas)  # type: ignore[arg-type]

        self._do(run)

    def record_retrieved(self, ids: Iterable[str]) -> None:
        self._bump(ids, "times_retrieved")

    def record_accepted(self, id: str) -> None:
        self._bump([id], "times_accepted")

    # -- reading ------------------------------------------------------------------------------------------

    @staticmethod
    def _pattern(document: str, meta: dict[str, Any]) -> Pattern:
        p = Pattern.from_dict(json.loads(document))
        # Counters live in metadata so bumping them never rewrites (or re-embeds) the record.
        p.times_retrieved = int(meta.get("times_retrieved", 0))
        p.times_accepted = int(meta.get("times_accepted", 0))
        return p

    def get(self, id: str) -> Pattern | None:
        got = self._do(lambda: self._col.get(ids=[id], include=["documents", "metadatas"]))
        if not got["ids"]:
            return None
        return self._pattern(got["documents"][0], got["metadatas"][0])  # type: ignore[index,arg-type]

    def list(self, category: str | None = None) -> list[Pattern]:
        where = {f"cat_{category}": True} if category else None
        got = self._do(lambda: self._col.get(where=where, include=["documents", "metadatas"]))  # type: ignore[arg-type]
        docs, metas = got["documents"] or [], got["metadatas"] or []
        pats = [self._pattern(d, m) for d, m in zip(docs, metas, strict=True)]  # type: ignore[arg-type]
        return sorted(pats, key=lambda p: p.id)

    def count(self) -> int:
        return int(self._do(lambda: self._col.count()))

    def search(self, query: RetrievalQuery, k: int = 5) -> list[tuple[Pattern, float, str]]:
        """The k best patterns as (pattern, score, why), best first."""
        total = self.count()
        if total == 0:
            return []
        vector = embed([query.embed_text()])
        hits = self._query(vector, query.category, total) if query.category else []
        in_category = {h[0].id for h in hits}
        if len(hits) < max(MIN_FILTERED, k):
            # Too few in the category (or none given): widen to all patterns, but keep off-category
            # ones below equally good in-category ones.
            hits += [h for h in self._query(vector, None, total) if h[0].id not in in_category]
        elif query.category:
            # The category is inferred from the reference and can be wrong: strong off-category matches
            # still compete, at a discount.
            hits += [h for h in self._query(vector, None, total) if h[0].id not in in_category]
        ranked = []
        for pattern, similarity, meta in hits:
            symptoms = _jaccard(query.symptoms, pattern.symptoms)
            features = _jaccard(query.code_features, json.loads(str(meta.get("features", "[]"))))
            score = W_TEXT * similarity + W_SYMPTOMS * symptoms + W_FEATURES * features
            if query.category and pattern.id not in in_category:
                score *= OFF_CATEGORY
            shared = sorted(set(query.symptoms) & set(pattern.symptoms))
            why = f"text {similarity:.2f}, symptoms {symptoms:.2f}"
            why += (f" ({', '.join(shared)})" if shared else "") + f", features {features:.2f}"
            ranked.append((pattern, round(score, 4), why))
        ranked.sort(key=lambda t: (-t[1], t[0].id))
        return ranked[:k]

    def _query(
        self, vector: list[list[float]], category: str | None, total: int
    ) -> list[tuple[Pattern, float, dict[str, Any]]]:
        where = {f"cat_{category}": True} if category else None
        n = min(total, 200)  # the symptom term reranks, so look past the nearest few
        got = self._do(
            lambda: self._col.query(
                query_embeddings=vector,  # type: ignore[arg-type]
                n_results=n,
                where=where,  # type: ignore[arg-type]
                include=["documents", "metadatas", "distances"],
            )
        )
        out = []
        rows = zip(got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True)  # type: ignore[index]
        for doc, meta, dist in rows:
            out.append((self._pattern(doc, meta), 1.0 - float(dist), dict(meta)))  # type: ignore[arg-type]
        return out

    def stats(self) -> dict[str, Any]:
        pats = self.list()
        cats = {c: 0 for c in CATEGORIES}
        classes: dict[str, int] = {}
        for p in pats:
            for c in p.categories:
                cats[c] = cats.get(c, 0) + 1
            classes[p.bug_class] = classes.get(p.bug_class, 0) + 1
        return {
            "patterns": len(pats),
            "categories": cats,
            "bug_classes": dict(sorted(classes.items())),
            "distilled": sum(p.provenance != "seed" for p in pats),
            "path": str(self.path),
        }

    # -- exchange -----------------------------------------------------------------------------------------

    def export(self, path: str | Path) -> int:
        """Write every pattern (with counters) as a JSON list; returns the count."""
        pats = self.list()
        Path(path).write_text(json.dumps([p.to_dict() for p in pats], indent=2, sort_keys=True) + "\n")
        return len(pats)

    def import_(self, path: str | Path) -> int:
        """Upsert the patterns of an exported JSON file (a list, or one pattern object); returns the count."""
        data = json.loads(Path(path).read_text())
        items = data if isinstance(data, list) else [data]
        pats = [Pattern.from_dict(d) for d in items]
        self._upsert(pats)
        return len(pats)


_OPEN: dict[str, KnowledgeBase] = {}
_OPEN_LOCK = threading.Lock()


def open_knowledge_base(path: str | Path | None = None) -> KnowledgeBase:
    """The process's store at `path` (default: default_path()), seeded once per process."""
    resolved = str(Path(path if path is not None else default_path()).expanduser().resolve())
    with _OPEN_LOCK:
        kb = _OPEN.get(resolved)
        if kb is None:
            kb = KnowledgeBase(resolved)
            kb.ensure_seeded()
            _OPEN[resolved] = kb
        return kb
