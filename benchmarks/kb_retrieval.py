"""Knowledge-base retrieval benchmark: top-1/top-3 accuracy on held-back paraphrased queries, and latency.

    python benchmarks/kb_retrieval.py [--kb PATH] [--json] [--queries FILE] [--verbose]

Without --kb the seed library is loaded into a throw-away store. Each query gives text, a symptom signature
and (usually) an operator category, as the diagnosis node would; a hit is an expected id in the top k.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from kernel_medic.vectordb.store import KnowledgeBase, RetrievalQuery

QUERIES = Path(__file__).with_name("kb_paraphrases.toml")


def run(kb: KnowledgeBase, queries: list[dict[str, Any]], k: int = 3) -> dict[str, Any]:
    kb.search(RetrievalQuery(text="warm up"), k=k)  # model load is not query latency
    hits1 = hits3 = 0
    latencies: list[float] = []
    misses: list[dict[str, Any]] = []
    for q in queries:
        symptoms = list(q.get("symptoms", []))
        query = RetrievalQuery(text=q["text"], symptoms=symptoms, category=q.get("category"))
        start = time.perf_counter()
        found = [p.id for p, _, _ in kb.search(query, k=k)]
        latencies.append((time.perf_counter() - start) * 1000)
        expect = set(q["expect"])
        hits1 += bool(found[:1] and found[0] in expect)
        if expect & set(found):
            hits3 += 1
        else:
            misses.append({"text": q["text"], "expect": sorted(expect), "got": found})
    latencies.sort()
    return {
        "queries": len(queries),
        "patterns": kb.count(),
        "top1": round(hits1 / len(queries), 4),
        f"top{k}": round(hits3 / len(queries), 4),
        "latency_ms_median": round(statistics.median(latencies), 2),
        "latency_ms_p95": round(latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 2),
        "misses": misses,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", help="an existing knowledge-base directory (default: a fresh seeded one)")
    parser.add_argument("--queries", default=str(QUERIES))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="list the misses")
    args = parser.parse_args(argv)
    queries = tomllib.loads(Path(args.queries).read_text())["query"]
    with tempfile.TemporaryDirectory(prefix="kmedic-kb-bench-") as tmp:
        kb = KnowledgeBase(args.kb or tmp)
        kb.ensure_seeded()
        result = run(kb, queries)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    rows = [
        ("queries", result["queries"]),
        ("patterns in store", result["patterns"]),
        ("top-1 accuracy", f"{result['top1']:.1%}"),
        ("top-3 accuracy", f"{result['top3']:.1%}"),
        ("latency median (ms)", result["latency_ms_median"]),
        ("latency p95 (ms)", result["latency_ms_p95"]),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if args.verbose:
        for miss in result["misses"]:
            print(f"MISS {miss['text']!r}: expected {miss['expect']}, got {miss['got']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
