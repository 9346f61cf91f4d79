"""`kmedic audit REF [CAND] [--json]`: the integrity gate alone. Exit 0 clean, 1 refused, 2 bad input."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kernel_medic.tools.evaluation.evaluate import Evaluator
from kernel_medic.tools.evaluation.problem import InvalidProblem, load_problem
from kernel_medic.tools.integrity.gate import AuditResult, audit

EXIT_OK, EXIT_FAIL = 0, 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="check a passing candidate for reward hacks (static, sandboxed and held-back checks)",
        description="Audit CANDIDATE (ModelNew) against REFERENCE (Model): does its own kernel compute the "
        "result, without torch doing the work, caching, tampering or special-casing, and does it hold on "
        "seeds, values and shapes never used before? Exit 0 clean, 1 cheat or suspicious, 2 bad input.",
    )
    parser.add_argument("reference", help="reference.py or a problem folder")
    parser.add_argument("candidate", nargs="?", help="candidate.py; omit when REFERENCE is a folder")
    parser.add_argument("--original", help="the candidate before repair: flags patches that regenerate it")
    parser.add_argument(
        "--device", choices=["auto", "cpu", "cuda", "npu"], help="device (default: problem's)"
    )
    parser.add_argument("--workers", type=int, default=None, help="sandboxed worker processes")
    parser.add_argument("--static-only", action="store_true", help="read the code only; run nothing")
    parser.add_argument("--tolerance", help="strict (default), kernelbench or ATOL,RTOL: see kmedic check")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    problem = load_problem(args.reference, args.candidate).with_tolerance(args.tolerance)
    original = None
    if args.original:
        path = Path(args.original)
        if not path.is_file():
            raise InvalidProblem(f"{path}: no such file (--original)")
        original = path.read_text(encoding="utf-8")
    from kernel_medic.tools.sandbox.backends import resolve_device

    # Probing for accelerators costs a subprocess; a static-only audit runs nothing, anywhere.
    try:
        device = "cpu" if args.static_only else resolve_device(args.device or problem.config.device)
    except ValueError as exc:
        raise InvalidProblem(str(exc)) from exc
    if not args.json:
        sys.stderr.write(f"[audit] {problem.name}: static checks, then sandboxed runs on {device}\n")
    with Evaluator(device=device, workers=args.workers) as evaluator:
        result = audit(problem, evaluator, original, dynamic="never" if args.static_only else "auto")
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(format_result(problem.name, result))
    return EXIT_OK if result.verdict == "clean" else EXIT_FAIL


def format_result(name: str, result: AuditResult) -> str:
    lines = [f"{name}: {result.verdict} ({', '.join(result.checks)} checks)"]
    for f in result.findings:
        where = f"{f.file}:{f.line}" if f.line else f.file
        lines.append(f"  [{f.severity}] {f.rule}  {where}  {f.evidence}")
    if result.held_back is not None:
        held = result.held_back
        lines.append(f"  held-back coverage: {held['verdict']} on {held['cases']} cases")
    lines += [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)
