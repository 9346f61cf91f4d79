"""Per-evaluation overhead: a warm sandboxed worker (fork per job) against a fresh interpreter per job.

Both sides measured in one run on the same machine, reported as a ratio:

    python benchmarks/worker_overhead.py [--jobs 30] [--fresh 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from kernel_medic.tools.sandbox.pool import WorkerPool

TRIVIAL_JOB = "kernel_medic.tools.sandbox.pool:exec_source"


def warm_worker_seconds(jobs: int) -> list[float]:
    with WorkerPool(device="cpu", size=1) as pool:
        pool.run(TRIVIAL_JOB, {"source": "result = 1"})  # start-up is paid once, outside the measurement
        times = []
        for _ in range(jobs):
            start = time.perf_counter()
            outcome = pool.run(TRIVIAL_JOB, {"source": "import torch, triton\nresult = 1"})
            times.append(time.perf_counter() - start)
            assert outcome.status == "ok", outcome.error
    return times


def fresh_process_seconds(runs: int) -> list[float]:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch, triton"], env=env, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=30, help="jobs on the warm worker")
    parser.add_argument("--fresh", type=int, default=5, help="fresh `python -c 'import torch, triton'` runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    warm = statistics.median(warm_worker_seconds(args.jobs))
    fresh = statistics.median(fresh_process_seconds(args.fresh))
    result = {
        "warm_worker_median_s": round(warm, 4),
        "fresh_process_median_s": round(fresh, 4),
        "ratio": round(fresh / warm, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}",
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"warm worker, fork per job : {warm * 1000:8.1f} ms (median of {args.jobs})")
        print(f"fresh python + torch/triton: {fresh * 1000:8.1f} ms (median of {args.fresh})")
        print(f"ratio                      : {fresh / warm:8.1f}x")


if __name__ == "__main__":
    main()
