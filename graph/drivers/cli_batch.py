"""`kmedic batch DIR`: repair every problem folder under DIR, resumably, into OUT/results.sqlite."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel_medic.graph.drivers.sources import resolve_source
from kernel_medic.tools.evaluation.problem import InvalidProblem


def register(subparsers: Any) -> None:
    batch = subparsers.add_parser(
        "batch",
        help="repair every problem folder under a directory (resumable; local threads or Ray)",
        description="Repair every folder under DIR that holds reference.py and candidate.py. Results go to "
        "OUT/results.sqlite as each case finishes; rerunning the same command resumes a killed batch without "
        "redoing finished cases. Exit 0 when every case is repaired, 1 when not, 2 on bad input.",
    )
    batch.add_argument(
        "dir",
        help="a folder of problem folders (searched recursively), a KernelBench run folder (with --problems) "
        "or a TritonBench-style .jsonl (with --references)",
    )
    add_source_arguments(batch)
    batch.add_argument(
        "--workers", type=int, default=2, help="repairs at once (and sandbox workers); default 2"
    )
    batch.add_argument("--executor", choices=["local", "ray"], default="local", help="local threads or Ray")
    batch.add_argument("--ray-address", help="Ray cluster address (default: start a local Ray instance)")
    batch.add_argument("--strategy", choices=["offline", "llm", "hybrid"], help="patch strategy")
    batch.add_argument("--max-iterations", type=int, help="patch-and-verify rounds per case")
    batch.add_argument("--device", choices=["cpu", "cuda", "npu"], help="device (default: cpu)")
    batch.add_argument("--out", default="kmedic-batch", help="output folder (default: ./kmedic-batch)")
    batch.add_argument("--no-html", action="store_true", help="skip the per-case HTML reports and index page")
    batch.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    batch.set_defaults(run=run)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that say how to import a generation run that is not already problem folders."""
    parser.add_argument(
        "--problems", help="for a KernelBench run folder: KernelBench's problem folder (holding level1/ ...)"
    )
    parser.add_argument(
        "--references", help="for a TritonBench-style .jsonl: the folder of reference problems, one per op"
    )
    parser.add_argument(
        "--code-field", help="for a .jsonl: the record field holding the code (default: predict)"
    )


def run(args: argparse.Namespace) -> int:
    from kernel_medic.graph.config import RepairConfig
    from kernel_medic.graph.drivers.batch import run_batch, summary_table

    if args.max_iterations is not None and args.max_iterations < 1:
        raise InvalidProblem("--max-iterations must be at least 1")
    try:
        config = RepairConfig.from_env(
            strategy=args.strategy,
            workers=args.workers,
            max_iterations=args.max_iterations,
            device=args.device,
        )
    except ValueError as exc:
        raise InvalidProblem(str(exc)) from exc
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InvalidProblem(f"{out}: --out exists and is not a folder")
    source = resolve_source(
        args.dir, out, problems=args.problems, references=args.references, code_field=args.code_field
    )
    result = run_batch(
        source,
        out,
        config,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        html=not args.no_html,
    )
    if args.json:
        print(json.dumps(result.to_dict(), allow_nan=False, default=str))
    else:
        print(summary_table(result))
    return 0 if all(row["status"] == "repaired" for row in result.rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m kernel_medic.graph.drivers.cli_batch DIR ...`: `batch` alone, with kmedic's exit codes."""

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:
            sys.stderr.write(f"kmedic: error: {message}\n")
            raise SystemExit(2)

    parser = Parser(prog="kmedic")
    register(parser.add_subparsers(dest="command", required=True, parser_class=Parser))
    args = parser.parse_args(["batch", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.run(args))
    except InvalidProblem as exc:
        sys.stderr.write(f"kmedic: error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
