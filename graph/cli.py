"""`kmedic`: the command line. Exit codes: 0 pass/success, 1 fail, 2 bad input."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from kernel_medic.tools.evaluate import CaseResult, EvalReport, Evaluator
from kernel_medic.tools.problem import InvalidProblem, Problem, load_problem

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        sys.stderr.write(f"kmedic: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kmedic", description="Repair near-miss accelerator kernels instead of regenerating them."
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    check = sub.add_parser(
        "check",
        help="evaluate a candidate against its reference and explain any mismatch",
        description="Run CANDIDATE (ModelNew) against REFERENCE (Model) in sandboxed workers and explain how "
        "they differ. REFERENCE may be a folder holding reference.py, candidate.py and problem.toml.",
    )
    check.add_argument(
        "reference", help="reference.py (Model, get_inputs, get_init_inputs) or a problem folder"
    )
    check.add_argument(
        "candidate", nargs="?", help="candidate.py (ModelNew); omit when REFERENCE is a folder"
    )
    check.add_argument(
        "--device", choices=["auto", "cpu", "cuda", "npu"], help="device (default: problem.toml or auto)"
    )
    check.add_argument(
        "--tier", choices=["light", "full"], default="full", help="light: default inputs, one seed"
    )
    check.add_argument(
        "--workers", type=int, default=None, help="sandboxed worker processes (default: CPU count)"
    )
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    check.set_defaults(run=_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except InvalidProblem as exc:
        if getattr(args, "json", False):
            print(json.dumps({"verdict": "invalid_problem", "error": str(exc)}))
        sys.stderr.write(f"kmedic: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("kmedic: interrupted\n")
        return 130


def _load(args: argparse.Namespace) -> tuple[Problem, str]:
    problem = load_problem(args.reference, args.candidate)
    requested = args.device or problem.config.device
    return problem, resolve_device(requested)


def resolve_device(requested: str) -> str:
    from kernel_medic.tools.backends import probe_devices, select_device

    if requested == "cpu":
        return "cpu"
    facts = probe_devices() if requested in ("auto", "cuda", "npu") else {"cuda": False, "npu": False}
    try:
        return select_device(requested, cuda_available=facts["cuda"], npu_available=facts["npu"])
    except ValueError as exc:
        raise InvalidProblem(str(exc)) from exc


def _check(args: argparse.Namespace) -> int:
    problem, device = _load(args)
    progress = None if args.json else _progress_printer(problem.name)
    with Evaluator(device=device, workers=args.workers) as evaluator:
        report = evaluator.evaluate(problem, tier=args.tier, progress=progress)
    if report.verdict == "invalid_problem":
        raise InvalidProblem(report.error or "invalid problem")
    if args.json:
        print(json.dumps(json_safe(check_json(report)), allow_nan=False))
    else:
        print(format_report(problem, report))
    return EXIT_OK if report.passed else EXIT_FAIL


def json_safe(value: Any) -> Any:
    """Strict JSON: infinities and NaN (an error can be infinite) become the strings "inf", "-inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def check_json(report: EvalReport) -> dict[str, Any]:
    data = report.to_dict()
    keep = ("name", "verdict", "max_abs_err", "max_rel_err", "mismatch_fraction", "nan_count", "inf_count")
    data["cases"] = [
        {
            **{k: getattr(c, k) for k in keep},
            "pattern": c.pattern,
            "pattern_detail": c.pattern_detail,
            "relationships": c.relationships,
            "numel": c.numel,
            "correct": c.correct,
            "error": c.error,
            "wall_s": round(c.wall_s, 3),
        }
        for c in report.cases
    ]
    return data


def _progress_printer(name: str):  # noqa: ANN202 - a closure type is noise here
    def show(done: int, total: int, case: CaseResult) -> None:
        sys.stderr.write(f"[{done}/{total}] {name} {case.name}: {case.verdict} ({case.wall_s:.2f} s)\n")
        sys.stderr.flush()

    return show


def format_report(problem: Problem, report: EvalReport) -> str:
    lines = [
        f"{problem.name}: {report.verdict.upper()}  score {report.score:.4f}  "
        f"({len(report.cases)} cases, {report.tier} tier, {report.device}, {report.wall_s:.1f} s)",
        "",
        f"{'case':<28} {'verdict':<15} {'max abs':>10} {'max rel':>10} {'wrong':>8}  where",
    ]
    for c in report.cases:
        where = c.error or (c.pattern if c.pattern != "none" else "")
        if c.relationships:
            where = f"{where}; {', '.join(c.relationships)}" if where else ", ".join(c.relationships)
        lines.append(
            f"{c.name:<28} {c.verdict:<15} {c.max_abs_err:>10.3g} {c.max_rel_err:>10.3g} "
            f"{c.mismatch_fraction:>7.1%}  {where}"
        )
    if report.symptoms:
        lines += ["", "symptoms:"] + [f"  - {s}" for s in report.symptoms]
    if report.dropped:
        lines += ["", "variants dropped:"] + [f"  - {d}" for d in report.dropped]
    if report.notes:
        lines += ["", "backend notes:"] + [f"  - {n}" for n in report.notes]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
