"""`kmedic`: the command line. Exit codes: 0 pass/success, 1 fail, 2 bad input."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel_medic.graph.drivers.cli_batch import add_source_arguments
from kernel_medic.graph.drivers.sources import resolve_source
from kernel_medic.tools.evaluation.evaluate import CaseResult, EvalReport, Evaluator
from kernel_medic.tools.evaluation.problem import InvalidProblem, Problem, load_problem
from kernel_medic.tools.sandbox.confinement import SandboxUnavailable

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        sys.stderr.write(f"kmedic: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


TOLERANCE_HELP = (
    "how outputs are judged, overriding problem.toml: strict (default: dtype table + the reference's own "
    "rounding error + every variant), kernelbench (KernelBench's allclose 1e-2 on 5 seeds), or ATOL,RTOL"
)


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
    check.add_argument("--tolerance", help=TOLERANCE_HELP)
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    check.set_defaults(run=_check)

    rep = sub.add_parser(
        "repair",
        help="repair a near-miss candidate (small verified fix, integrity-gated)",
        description="Find what is wrong with CANDIDATE, make a small verified fix and audit it. Progress per "
        "node goes to stderr. Exit 0 when repaired, 1 when not, 2 on bad input.",
    )
    rep.add_argument("reference", nargs="?", help="reference.py or a problem folder (omit with --resume)")
    rep.add_argument("candidate", nargs="?", help="candidate.py; omit when REFERENCE is a folder")
    rep.add_argument(
        "--strategy", choices=["offline", "llm", "hybrid"], help="patch strategy (default: offline)"
    )
    rep.add_argument("--max-iterations", type=int, help="patch-and-verify rounds before giving up")
    rep.add_argument("--tolerance", help=TOLERANCE_HELP)
    rep.add_argument("--device", choices=["auto", "cpu", "cuda", "npu"], help="device (default: cpu)")
    rep.add_argument("--workers", type=int, help="sandboxed worker processes (default: CPU count)")
    rep.add_argument("--model", help="LLM model name (or KMEDIC_MODEL / OPENAI_MODEL)")
    rep.add_argument("--out", help="write repaired.py (when repaired), report.json and diff.patch here")
    rep.add_argument("--trace", help="trace file (default: --out/trace.jsonl, else the data directory)")
    rep.add_argument("--thread", help="thread id for the checkpoints (default: a new one)")
    rep.add_argument(
        "--resume", metavar="THREAD", help="continue an interrupted run from its last checkpoint"
    )
    rep.add_argument("--checkpoint-db", help="SQLite checkpoint file (default: the data directory)")
    rep.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    rep.set_defaults(run=_repair)

    rpl = sub.add_parser(
        "replay",
        help="re-run a recorded trace offline and check it reproduces",
        description="Re-run TRACE with its recorded LLM responses (no network) and check that it takes the "
        "same path, proposes the same patches and reaches the same verdict. With --from-step N, re-run to "
        "step N and fork the run there with changed settings (--set key=value).",
    )
    rpl.add_argument("trace", help="a trace written by kmedic repair")
    rpl.add_argument("--from-step", type=int, help="fork after this many nodes have finished")
    rpl.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a changed setting for the fork"
    )
    rpl.add_argument("--json", action="store_true", help="print the replay report as one JSON object")
    rpl.set_defaults(run=_replay)

    bench = sub.add_parser(
        "bench",
        help="repair every case of a near-miss corpus and report Pass@k, per-category rates and costs",
        description="Repair every case folder under CORPUS (reference.py, candidate.py, fixed.py, meta.toml) "
        "WORKERS at a time. Finished cases are recorded under --out as they end, so a rerun resumes. Writes "
        "report.json, report.md and report.png to --out.",
    )
    bench.add_argument(
        "corpus",
        help="corpus folder, e.g. benchmarks/near_miss; or a KernelBench run folder (with --problems) or a "
        "TritonBench-style .jsonl (with --references), imported into OUT/imported first",
    )
    add_source_arguments(bench)
    bench.add_argument(
        "--strategy", choices=["offline", "llm", "hybrid"], help="patch strategy (default: offline)"
    )
    bench.add_argument("--workers", type=int, default=2, help="repairs (and sandboxed workers) at a time")
    bench.add_argument("--attempts", type=int, default=1, help="independent attempts per case (Pass@k)")
    bench.add_argument("--max-iterations", type=int, help="patch-and-verify rounds per repair")
    bench.add_argument("--tolerance", help=TOLERANCE_HELP)
    bench.add_argument("--cases", nargs="*", help="only cases whose name contains one of these")
    bench.add_argument("--out", default="out/bench", help="results folder (default: out/bench)")
    bench.add_argument(
        "--baseline",
        choices=["none", "regenerate"],
        default="none",
        help="also run the Regenerate baseline (needs an LLM): fresh kernels from the reference alone",
    )
    bench.add_argument("--baseline-attempts", type=int, default=3, help="regenerations per case (Pass@k)")
    bench.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    bench.set_defaults(run=_bench)

    from kernel_medic.graph.drivers import cli_audit, cli_batch, cli_kb

    cli_audit.register(sub)
    cli_kb.register(sub)
    cli_batch.register(sub)
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
    except SandboxUnavailable as exc:  # no bubblewrap and no opt-in to the weak sandbox: say so, run nothing
        if getattr(args, "json", False):
            print(json.dumps({"verdict": "sandbox_unavailable", "error": str(exc)}))
        sys.stderr.write(f"kmedic: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("kmedic: interrupted\n")
        return 130


def _load(args: argparse.Namespace) -> tuple[Problem, str]:
    problem = load_problem(args.reference, args.candidate).with_tolerance(getattr(args, "tolerance", None))
    requested = args.device or problem.config.device
    return problem, resolve_device(requested)


def resolve_device(requested: str) -> str:
    from kernel_medic.tools.sandbox.backends import resolve_device as resolve

    try:
        return resolve(requested)
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
            "counted": c.counted,
            "tolerance": c.tolerance,
            "crash": c.crash,
        }
        for c in report.cases
    ]
    return data


def _tolerance_line(report: EvalReport) -> str:
    """The profile and bar of the seed case, and the reference's largest own rounding error over all cases."""
    bars = [c.tolerance for c in report.cases if c.tolerance]
    bars = [b for bar in bars for b in (bar.get("outputs") or [bar])]
    if not bars:
        return "not measured"
    first = bars[0]
    line = f"{first['profile']}, atol {first['atol']:g}, rtol {first['rtol']:g}"
    errors = [b["reference_error"] for b in bars if b.get("reference_error") is not None]
    if errors:
        line += (
            f", plus {bars[0].get('rounding_slack', 0):g} x the measured float32 rounding "
            f"(float64 reruns of the reference; largest {max(errors):.3g})"
        )
    elif first["profile"] != "kernelbench":
        line += " (no float64 rerun of the reference: fixed table)"
    return line


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
        verdict = c.verdict if c.counted or c.verdict == "outside_domain" else f"({c.verdict})"
        lines.append(
            f"{c.name:<28} {verdict:<15} {c.max_abs_err:>10.3g} {c.max_rel_err:>10.3g} "
            f"{c.mismatch_fraction:>7.1%}  {where}"
        )
    lines.append(f"tolerance: {_tolerance_line(report)}")
    if report.crash:
        lines += ["", crash_line(report.crash, problem.candidate_path.name)]
    if report.symptoms:
        lines += ["", "symptoms:"] + [f"  - {s}" for s in report.symptoms]
    if report.warnings:
        lines += ["", "warnings (not part of the verdict):"] + [f"  - {w}" for w in report.warnings]
    if report.dropped:
        lines += ["", "variants dropped:"] + [f"  - {d}" for d in report.dropped]
    if report.notes:
        lines += ["", "backend notes:"] + [f"  - {n}" for n in report.notes]
    return "\n".join(lines)


def crash_line(crash: dict[str, Any], filename: str = "candidate.py") -> str:
    """One line: the crash class, where it happened in the candidate, the exception and the evidence."""
    where = f"{filename}:{crash['line']}" if crash.get("line") else filename
    code = f" `{crash['code']}`" if crash.get("code") else ""
    exc = f" {crash['exception']}: {crash['message']}" if crash.get("exception") else f" {crash['message']}"
    limitation = crash["class"] == "interpreter_limitation"
    label = " (a CPU-interpreter limitation, not repaired)" if limitation else ""
    return f"crash: {crash['class']}{label} at {where}{code} --{exc}"


def _repair(args: argparse.Namespace) -> int:
    from kernel_medic.graph.api import repair, resume
    from kernel_medic.graph.config import RepairConfig

    progress = _node_printer()
    out = Path(args.out) if args.out else None
    if args.resume:
        try:
            result = resume(args.resume, checkpoint_db=args.checkpoint_db, progress=progress)
        except ValueError as exc:
            raise InvalidProblem(str(exc)) from exc
    else:
        if not args.reference:
            raise InvalidProblem("repair needs REFERENCE [CANDIDATE] or --resume THREAD")
        device = args.device
        try:
            config = RepairConfig.from_env(
                strategy=args.strategy,
                max_iterations=args.max_iterations,
                tolerance=args.tolerance,
                device=device,
                workers=args.workers,
                model=args.model,
            )
        except ValueError as exc:
            raise InvalidProblem(str(exc)) from exc
        require_llm_endpoint(config)
        if config.device != "cpu":
            config = RepairConfig.from_dict({**config.to_dict(), "device": resolve_device(config.device)})
        trace = args.trace or (str(out / "trace.jsonl") if out else None)
        result = repair(
            args.reference,
            args.candidate,
            config,
            trace=trace,
            thread_id=args.thread,
            checkpoint_db=args.checkpoint_db,
            progress=progress,
        )
    if result.status == "invalid":
        raise InvalidProblem(result.error)
    if out is not None:
        from kernel_medic.graph.drivers.html_report import html_for_repair

        write_outputs(out, result.to_dict(), result.repaired_source, result.diff)
        html_for_repair(result, out)
    if args.json:
        print(json.dumps(json_safe(repair_json(result.to_dict())), allow_nan=False))
    else:
        print(format_repair(result.to_dict()))
    return EXIT_OK if result.status == "repaired" else EXIT_FAIL


def require_llm_endpoint(config: Any) -> None:
    """An LLM strategy without an endpoint fails here, in one line, before any work is done."""
    from kernel_medic.tools.repair.llm import LLMSettings

    if config.strategy == "offline" or config.llm_replay:
        return
    if not LLMSettings.from_env(model=config.model, base_url=config.base_url).configured():
        raise InvalidProblem(
            f"--strategy {config.strategy} needs an LLM endpoint: set OPENAI_BASE_URL (e.g. a local "
            "OpenAI-compatible server, http://127.0.0.1:8000/v1) and/or OPENAI_API_KEY"
        )


def repair_json(result: dict[str, Any]) -> dict[str, Any]:
    tokens = result["tokens"]
    return {
        **{
            k: result[k]
            for k in (
                "status",
                "stop_reason",
                "iterations",
                "llm_calls",
                "wall_s",
                "score",
                "diff_lines",
                "thread_id",
                "trace_path",
                "diff",
                "error",
                "llm_wall_s",
                "llm_answers",
            )
        },
        "tokens": {**tokens, "total": tokens["input"] + tokens["output"]},
        "integrity": result["integrity"].get("verdict", "not_audited"),
        "integrity_findings": result["integrity"].get("findings", []),
        "warnings": result.get("warnings", []),
        "crash": result.get("crash"),
        "attempts": [
            {
                k: a.get(k)
                for k in (
                    "iteration",
                    "strategy",
                    "hypothesis",
                    "rule",
                    "description",
                    "verdict",
                    "score",
                    "diff_lines",
                )
            }
            for a in result["attempts"]
        ],
    }


def write_outputs(out: Path, result: dict[str, Any], repaired: str | None, diff: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(json_safe(result), indent=2, allow_nan=False) + "\n")
    (out / "diff.patch").write_text(diff)
    stale = out / "repaired.py"
    if repaired is not None:
        stale.write_text(repaired)
    elif stale.exists():
        stale.unlink()  # a previous run's file must not pass for this run's result


def format_repair(result: dict[str, Any]) -> str:
    tokens = result["tokens"]["input"] + result["tokens"]["output"]
    lines = [
        f"{result['status'].upper()} ({result['stop_reason']}): score {result['score']:.4f}, "
        f"{result['iterations']} iterations, {result['llm_calls']} LLM calls, {tokens} tokens, "
        f"{result['wall_s']:.1f} s, diff {result['diff_lines']} lines, "
        f"integrity {result['integrity'].get('verdict', 'not audited')}",
        f"thread {result['thread_id']}; trace {result['trace_path']}",
    ]
    for f in result["integrity"].get("findings", []):
        lines.append(f"  integrity: {f['rule']} (line {f['line']}): {f['evidence']}")
    for warning in result.get("warnings", []):
        lines.append(f"  warning (not part of the verdict): {warning}")
    if result.get("crash"):
        lines.append("  " + crash_line(result["crash"]))
    if result["diff"]:
        lines += ["", result["diff"].rstrip()]
    return "\n".join(lines)


def _node_printer():  # noqa: ANN202
    def show(node: str, delta: dict[str, Any]) -> None:
        detail = ""
        if node in ("evaluate", "verify") and delta.get("attempts"):
            a = delta["attempts"][-1]
            detail = f" {a['description']}: {a['verdict']} score {a['score']:.4f}"
        elif node == "evaluate" and "best_verdict" in delta:
            detail = f" {delta['best_verdict']} score {delta['best_score']:.4f}"
        elif node == "patch" and delta.get("llm_answers"):
            detail = " " + llm_answers_line(delta["llm_answers"], delta.get("pending"), delta.get("error"))
        elif node == "patch" and delta.get("pending"):
            detail = f" {delta['pending']['description']}"
        elif node == "audit" and delta.get("integrity"):
            detail = f" {delta['integrity']['verdict']}"
        elif node == "guard" and delta.get("backtracks"):
            detail = f" nothing gains: back to the version before the best (score {delta['best_score']:.4f})"
        elif delta.get("stop_reason"):
            detail = f" stop: {delta['stop_reason']}"
        sys.stderr.write(f"[{node}]{detail} ({delta.get('wall_s', 0.0):.2f} s)\n")
        sys.stderr.flush()

    return show


def llm_answers_line(answers: list[dict[str, Any]], pending: dict[str, Any] | None, error: str | None) -> str:
    """What the LLM answered this step and what became of it, e.g. `llm: 2 answers (fenced_code: refused -
    rewrites 80% ...; search_replace: applied) -> llm search_replace, line 9: ...`."""
    parts = []
    for a in answers:
        what = "applied" if a.get("applied") else f"refused - {str(a.get('refusal', ''))[:140]}"
        parts.append(f"{a.get('form')}: {what}")
    tokens_in = sum(int(a.get("input_tokens", 0)) for a in answers)
    tokens_out = sum(int(a.get("output_tokens", 0)) for a in answers)
    plural = "s" if len(answers) != 1 else ""
    line = f"llm: {len(answers)} answer{plural} ({'; '.join(parts)}; {tokens_in} in / {tokens_out} out)"
    if pending:
        return f"{line} -> {pending['description']}"
    return f"{line} -> no edit" + (f" ({error[:160]})" if error else "")


def _replay(args: argparse.Namespace) -> int:
    from kernel_medic.graph.drivers.replay import replay

    changes: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise InvalidProblem(f"--set expects KEY=VALUE, got {item!r}")
        changes[key.replace("-", "_")] = _coerce(value)
    if changes and args.from_step is None:
        raise InvalidProblem("--set changes a fork: give --from-step N too")
    if not Path(args.trace).is_file():
        raise InvalidProblem(f"{args.trace}: no such trace file")
    try:
        report = replay(args.trace, from_step=args.from_step, changes=changes)
    except ValueError as exc:
        raise InvalidProblem(str(exc)) from exc
    data = report.to_dict()
    if args.json:
        print(json.dumps(json_safe(data), allow_nan=False))
    elif args.from_step is None:
        verdict = "REPRODUCED" if report.same else "DIVERGED"
        print(f"{verdict}: {len(report.replayed['nodes'])} steps, status {report.replayed['status']}")
        for d in report.differences:
            print(f"  - {d}")
    else:
        print(
            f"FORKED at step {args.from_step} with {changes}: {data['result']['status']} "
            f"({data['result']['stop_reason']}); trace {report.trace_path}"
        )
    if args.from_step is None:
        return EXIT_OK if report.same else EXIT_FAIL
    return EXIT_OK if data["result"]["status"] == "repaired" else EXIT_FAIL


def _bench(args: argparse.Namespace) -> int:
    import uuid

    from kernel_medic.graph.api import repair
    from kernel_medic.graph.config import RepairConfig
    from kernel_medic.graph.drivers.bench import (
        CaseOutcome,
        integrity_rejections,
        progress_bar,
        run_bench,
        summarize,
    )
    from kernel_medic.graph.drivers.bench import write_report as write_bench_report
    from kernel_medic.tools.evaluation.corpus import CorpusCase, load_corpus

    root = resolve_source(
        args.corpus,
        Path(args.out),
        problems=args.problems,
        references=args.references,
        code_field=args.code_field,
    )
    if not root.is_dir():
        raise InvalidProblem(f"{root}: no such corpus folder")
    if args.workers < 1 or args.attempts < 1:
        raise InvalidProblem("--workers and --attempts must be at least 1")
    try:
        cases = load_corpus(root)
        config = RepairConfig.from_env(
            strategy=args.strategy,
            workers=args.workers,
            max_iterations=args.max_iterations,
            tolerance=args.tolerance,
        )
    except ValueError as exc:
        raise InvalidProblem(str(exc)) from exc
    require_llm_endpoint(config)
    if args.cases:
        cases = [c for c in cases if any(part in c.name for part in args.cases)]
    if not cases:
        raise InvalidProblem(f"{root}: no cases to run")
    out = Path(args.out)

    def repair_case(case: CorpusCase, attempt: int, out: Path) -> CaseOutcome:
        tag = f"{case.name}.attempt{attempt}"
        result = repair(
            case.path,
            None,
            config,
            trace=out / "traces" / f"{tag}.jsonl",
            thread_id=f"{tag}-{uuid.uuid4().hex[:6]}",
            checkpoint_db=out / "checkpoints" / f"{tag}.sqlite",
        )
        return CaseOutcome(
            name=case.name,
            category=case.category,
            attempt=attempt,
            status=result.status,
            stop_reason=result.stop_reason,
            score=result.score,
            iterations=result.iterations,
            llm_calls=result.llm_calls,
            tokens=result.tokens["input"] + result.tokens["output"],
            wall_s=result.wall_s,
            diff_lines=result.diff_lines if result.status == "repaired" else 0,
            integrity_rejections=integrity_rejections(result.trace_path),
            looked_at=case.looked_at,
            error=result.error,
            start_verdict=result.start_verdict,
            final_verdict=result.final_verdict,
            crash_class=str((result.crash or {}).get("class", "")),
        )

    outcomes = run_bench(
        cases,
        out,
        repair_case,
        workers=args.workers,
        attempts=args.attempts,
        progress=None if args.json else progress_bar(),
    )
    summary = summarize(outcomes, args.attempts)
    summary["strategy"] = config.strategy
    if args.baseline == "regenerate":
        summary["regenerate"] = _regenerate_baseline(cases, config, out, args.baseline_attempts)
    paths = write_bench_report(summary, out, f"kmedic bench {root} --strategy {config.strategy}")
    if args.json:
        print(json.dumps(json_safe({**summary, "report": paths}), allow_nan=False))
    else:
        print(Path(paths["markdown"]).read_text())
        print(f"report: {paths['json']}, {paths['markdown']}, {paths['png']}")
    return EXIT_OK


def _regenerate_baseline(cases: list[Any], config: Any, out: Path, attempts: int) -> dict[str, Any]:
    """Regenerate every case from its reference (resumable like the bench) and summarise it."""
    from kernel_medic.graph.drivers.regenerate import regenerate
    from kernel_medic.graph.runtime import chat_model_for, evaluator_for
    from kernel_medic.tools.repair.llm import LLMSettings

    if not LLMSettings.from_env(model=config.model, base_url=config.base_url).configured():
        raise InvalidProblem("--baseline regenerate needs an LLM: set OPENAI_BASE_URL and/or OPENAI_API_KEY")
    folder = out / "regenerate"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in cases:
        record = folder / f"{case.name}.json"
        if not record.exists():
            outcome = regenerate(
                load_problem(case.path), chat_model_for(config, None), evaluator_for(config), attempts
            )
            record.write_text(json.dumps(outcome.to_dict()))
        rows.append(json.loads(record.read_text()))
    successes = [r for r in rows if r["status"] == "repaired"]
    return {
        "attempts": attempts,
        "pass_at_1": round(sum(r["first_success"] == 1 for r in rows) / len(rows), 4),
        f"pass_at_{attempts}": round(len(successes) / len(rows), 4),
        "llm_tokens_per_success": round(sum(r["tokens"] for r in rows) / len(successes), 1)
        if successes
        else None,
        "cases": len(rows),
    }


def _coerce(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


if __name__ == "__main__":
    raise SystemExit(main())
