"""Batch throughput, local threads vs Ray actors with the same number of workers, in one run.

    python benchmarks/batch_throughput.py [--cases 12] [--workers 2] [--corpus DIR] [--json]

Each executor repairs the same cases (offline strategy) into its own fresh output folder; wall time includes
starting its workers (and, for Ray, the local Ray instance), as a user would pay it. Prints cases/minute for
both and the Ray/local ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from kernel_medic.graph.config import RepairConfig  # noqa: E402
from kernel_medic.graph.drivers.batch import run_batch  # noqa: E402
from kernel_medic.graph.runtime import close_all  # noqa: E402
from problems import SCALE_CANDIDATE, scale_candidate, write_problem  # noqa: E402

VARIANTS = {
    "scale_ok": SCALE_CANDIDATE,
    "scale_mask_le": scale_candidate(("offs < n", "offs <= n")),
    "scale_grid_floor": scale_candidate(("triton.cdiv(n, 256)", "n // 256")),
    "scale_wrong_constant": scale_candidate(("x * 2.0", "x * 3.0")),
}


def make_cases(root: Path, count: int) -> Path:
    """COUNT small problems: scale variants and copies of the bundled softmax example, in turn."""
    kinds = [*VARIANTS, "softmax_tail"]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        folder = root / f"{i:03d}_{kind}"
        if kind == "softmax_tail":
            shutil.copytree(REPO / "examples" / "softmax_tail", folder)
        else:
            write_problem(folder, VARIANTS[kind])
    return root


def measure(corpus: Path, out: Path, executor: str, workers: int, max_iterations: int) -> dict[str, Any]:
    config = RepairConfig.from_env(strategy="offline", workers=workers, max_iterations=max_iterations)
    start = time.monotonic()
    run = run_batch(
        corpus, out, config, executor=executor, workers=workers, html=False, stream=open(os.devnull, "w")
    )
    wall = time.monotonic() - start
    close_all()  # the next executor starts from cold too
    return {
        "executor": executor,
        "workers": workers,
        "cases": len(run.rows),
        "counts": run.counts,
        "wall_s": round(wall, 2),
        "cases_per_min": round(len(run.rows) / wall * 60, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=12, help="generated cases (ignored with --corpus)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-iterations", type=int, default=3)
    parser.add_argument("--corpus", help="a folder of problem folders to use instead of generated ones")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with tempfile.TemporaryDirectory(prefix="kmedic-throughput-") as tmp:
        os.environ.setdefault("KMEDIC_HOME", str(Path(tmp) / "home"))
        corpus = Path(args.corpus) if args.corpus else make_cases(Path(tmp) / "cases", args.cases)
        results = [
            measure(corpus, Path(tmp) / executor, executor, args.workers, args.max_iterations)
            for executor in ("local", "ray")
        ]
    local, ray = results
    ratio = round(ray["cases_per_min"] / local["cases_per_min"], 3) if local["cases_per_min"] else 0.0
    if args.json:
        print(json.dumps({"results": results, "ray_over_local": ratio}))
        return 0
    print(f"{'executor':<9} {'workers':>7} {'cases':>6} {'wall s':>8} {'cases/min':>10}  outcomes")
    for r in results:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r["counts"].items()))
        print(
            f"{r['executor']:<9} {r['workers']:>7} {r['cases']:>6} {r['wall_s']:>8.1f} "
            f"{r['cases_per_min']:>10.1f}  {outcomes}"
        )
    print(f"ray / local throughput: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
