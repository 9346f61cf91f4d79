"""Triage TritonBench generations with our own judge: which pass, which are near-misses, which crash.

    python benchmarks/tritonbench/triage.py --snapshot /work/.mirror/thunlp+TritonBench/repo \
        [--files LLM_generated/Bench_T_coder_specific/deepseek.jsonl,...] [--parallel 2] [--timeout 150] \
        [--until 13:30] [--near-misses 45] [--crashes 60]

Every record of the given JSONL files (default: all of ``LLM_generated/Bench_T_coder_specific/``; NEVER
``Bench_T_general_purpose/``, held out) is imported as a problem (``import_tritonbench``: the references
come from ``specs.json`` via ``build.write_references``) under ``_work/`` (gitignored), records with no
``@triton.jit`` or the same code as an earlier record of the same operator skipped. Then the judge of
``kmedic check --json --tier light`` (sandboxed, CPU interpreter; in this process with a warm worker per
thread, or with ``--cli`` one ``kmedic check`` process per record) judges them, ``--parallel`` at a time, in
an order that spreads them over operators and files (round robin by operator), until the quotas or the
clock say stop.
Results go to ``triage.jsonl`` beside this script, one line per record, so a rerun resumes.

Classes (``classify``):
- ``pass``; ``near_miss``: verdict ``mismatch`` (it runs, right shape and dtype, wrong numbers);
- ``crash``: ``compile_error``, ``runtime_error``, ``shape_mismatch``, ``dtype_mismatch``, ``timeout``,
  ``crash``
  (and a candidate import-time failure reported as ``invalid_problem`` by a judge that predates issue 18);
  CUDA-only calls in the generation (``.cuda()``, ``torch.cuda.*``, ``device='cuda'``) are crashes: on this
  machine that wrapper is simply wrong;
- ``interpreter_only``: a crash whose error is a limitation of Triton's CPU interpreter rather than of the
  kernel (``interpreter_limitation``): a NotImplementedError or "not supported" raised from
  ``triton/runtime/interpreter.py``, or an error naming the interpreter, raised below the kernel. These are
  kept out of the crash corpus;
- ``missing_dependency``: the generation imports a package that is neither Triton nor torch (``flag_gems``);
  not a kernel bug, kept out of the crash corpus;
- ``not_code`` (set when the manifests are written): a SyntaxError of a record without Markdown fences, i.e.
  prose the extraction took for code; not a kernel bug, kept out of the crash corpus;
- ``near_miss_random`` (set when the manifests are written): a near-miss of an operator whose reference
  draws random numbers (seeded dropout, sampling); another valid random stream reads as wrong numbers, so
  these stay out of the real-world corpus;
- ``invalid``: the reference or our wrapper failed (``invalid_problem`` that is not the candidate's import).

The crash class after the verdict is the judge's own (``report["crash"]["class"]``, issue 18) if any.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402  (the sibling builder: references from specs)
from kernel_medic.graph.drivers.import_tritonbench import import_tritonbench  # noqa: E402

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"
RESULTS = HERE / "triage.jsonl"
KMEDIC = Path(sys.executable).parent / "kmedic"
HELD_OUT = "LLM_generated/Bench_T_general_purpose"
DEFAULT_DIR = "LLM_generated/Bench_T_coder_specific"
CRASH_VERDICTS = {"compile_error", "runtime_error", "shape_mismatch", "dtype_mismatch", "timeout", "crash"}
_INTERPRETER = re.compile(
    r"interpreter\.py.*\n.*(NotImplementedError|not (?:yet )?supported)|"
    r"(not (?:yet )?supported|unsupported)[^\n]*interpret|"
    r"interpret[^\n]*(not (?:yet )?supported|unsupported)",
    re.I,
)
_CUDA_ONLY = re.compile(
    r"torch\.cuda|\.cuda\(|device\s*=\s*['\"]cuda|Torch not compiled with CUDA|CUDA", re.I
)


def model_of(file: str) -> str:
    """The model (and setting) a JSONL file holds, from its name: deepseek_rag.jsonl -> deepseek_rag."""
    return Path(file).stem


def list_files(snapshot: Path, folder: str) -> list[str]:
    if folder.rstrip("/").startswith(HELD_OUT):
        raise ValueError(f"{folder} is held out")
    out = subprocess.run(
        ["git", "-C", str(snapshot), "ls-tree", "--name-only", "HEAD", f"{folder.rstrip('/')}/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [f for f in out if f.endswith(".jsonl")]


def first_error(report: dict[str, Any]) -> str:
    for case in report.get("cases") or []:
        if case.get("error"):
            return str(case["error"])
    return str(report.get("error") or "")


def classify(report: dict[str, Any]) -> tuple[str, str]:
    """(class, one-line error class) of a `kmedic check --json` report (see the module docstring)."""
    verdict = report.get("verdict", "invalid_problem")
    error = first_error(report) or str(report.get("error") or "")
    crash = report.get("crash") if isinstance(report.get("crash"), dict) else {}
    last = next((line.strip() for line in reversed(error.splitlines()) if line.strip()), "")
    kind = re.search(r"([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))", last)
    short = crash.get("exception") or (kind.group(1) if kind else last[:60]) or verdict
    label = f"{crash['class']}: {short}" if crash.get("class") else short
    if verdict == "pass":
        return "pass", "pass"
    if verdict == "mismatch":
        return "near_miss", "mismatch"
    missing = re.search(r"No module named '([\w.]+)'", error)
    if missing and missing.group(1).split(".")[0] not in ("triton", "torch"):
        # The generation imports a package that is not Triton or torch (flag_gems...): not a kernel bug.
        return "missing_dependency", f"{verdict}: no module {missing.group(1).split('.')[0]}"
    if verdict == "invalid_problem":
        if "candidate" in error and ("import" in error or "SyntaxError" in error):
            return "crash", f"compile_error: {label}"
        return "invalid", f"invalid_problem: {short}"
    if verdict in CRASH_VERDICTS:
        limited = crash.get("class") == "interpreter_limitation" or (
            not crash and _INTERPRETER.search(error) is not None
        )
        if limited and not _CUDA_ONLY.search(error):
            return "interpreter_only", f"{verdict}: interpreter_limitation: {short}"
        return "crash", f"{verdict}: {label}"
    return "invalid", f"{verdict}: {short}"


def check(folder: Path, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    start = time.time()
    try:
        proc = subprocess.run(
            [str(KMEDIC), "check", "--json", "--tier", "light", "--workers", "1", str(folder)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"verdict": "timeout", "error": f"kmedic check exceeded {timeout:.0f} s", "wall_s": timeout}
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        report = {"verdict": "invalid_problem", "error": f"check failed: {tail}"}
    report["wall_s"] = round(time.time() - start, 2)
    return report


_local = threading.local()


def check_in_process(folder: Path) -> dict[str, Any]:
    """The same judge as `kmedic check --json --tier light` (its JSON), on a warm sandboxed worker per thread.

    Saves the CLI's start-up and a fresh worker per record (most of a light check's wall time here); the
    candidate still runs only in the sandboxed worker, never in this process.
    """
    from kernel_medic.graph.drivers.cli import check_json, json_safe
    from kernel_medic.tools.evaluation.evaluate import Evaluator
    from kernel_medic.tools.evaluation.problem import InvalidProblem, load_problem

    start = time.time()
    if getattr(_local, "evaluator", None) is None:
        _local.evaluator = Evaluator(device="cpu", workers=1)
    try:
        report = _local.evaluator.evaluate(load_problem(folder), tier="light")
        data = json_safe(check_json(report))
        if report.verdict == "invalid_problem":
            data = {"verdict": "invalid_problem", "error": report.error or "invalid problem"}
    except InvalidProblem as exc:
        data = {"verdict": "invalid_problem", "error": str(exc)}
    except Exception as exc:  # a broken pool: start a fresh one for the next record
        _local.evaluator.close()
        _local.evaluator = None
        data = {"verdict": "invalid_problem", "error": f"harness: {type(exc).__name__}: {exc}"}
    data["wall_s"] = round(time.time() - start, 2)
    return data


def order(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Round robin over operators (files interleaved within an operator), so a partial run spreads."""
    by_op: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in problems:
        by_op[p["op"]].append(p)
    for items in by_op.values():
        items.sort(key=lambda p: (p["record"], p["file"]))
        # interleave files: the n-th record of each file before the (n+1)-th of any
        seen: Counter[str] = Counter()
        ranked = []
        for p in items:
            ranked.append((seen[p["file"]], p["file"], p))
            seen[p["file"]] += 1
        items[:] = [p for _, _, p in sorted(ranked, key=lambda r: (r[0], r[1]))]
    queue, depth = [], 0
    ops = sorted(by_op)
    while any(len(by_op[o]) > depth for o in ops):
        queue += [by_op[o][depth] for o in ops if len(by_op[o]) > depth]
        depth += 1
    return queue


def g_ops_by_label(snapshot: Path) -> dict[str, str]:
    """TritonBench-G: the original operator's code (a record's `label`) -> its data file stem."""
    meta = json.loads(build.git_show(snapshot, "data/TritonBench_G_v1.json"))
    return {m["output"].strip(): m["file"].removesuffix(".py") for m in meta}


def prepare(snapshot: Path, files: list[str]) -> list[dict[str, Any]]:
    """Import every file's records as problems under _work/.

    TritonBench-G records get an `op` field: the operator whose original code equals the record's `label`
    (records whose label matches none are skipped)."""
    specs = json.loads(build.SPECS.read_text())
    refs = {b: build.write_references(snapshot, specs, WORK / "references" / b, b) for b in ("T", "G")}
    labels = g_ops_by_label(snapshot) if any(build.bench_of(f) == "G" for f in files) else {}
    problems = []
    for file in files:
        if HELD_OUT in file:
            raise ValueError(f"{file} is held out")
        bench = build.bench_of(file)
        local = WORK / "jsonl" / file.replace("/", "__")
        local.parent.mkdir(parents=True, exist_ok=True)
        text = build.git_show(snapshot, file)
        local.write_text(text)
        op_field = None
        if bench == "G":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
            for r in records:
                r["op"] = labels.get(str(r.get("label", "")).strip())
            mapped = local.with_suffix(".ops.jsonl")
            mapped.write_text("".join(json.dumps(r) + "\n" for r in records))
            local, op_field = mapped, "op"
        target = WORK / "problems" / model_of(file)
        folders = import_tritonbench(local, WORK / "references" / bench, target, op_field=op_field)
        for folder in folders:
            src = dict(line.split(" = ", 1) for line in (folder / "source.toml").read_text().splitlines())
            problems.append(
                {
                    "file": file,
                    "record": int(src["record"]),
                    "op": json.loads(src["op"]),
                    "model": model_of(file),
                    "folder": str(folder),
                }
            )
        print(f"{file}: {len(folders)} problems ({len(refs[bench])} references)", flush=True)
    return problems


MANIFEST_HEADER = """\
# {title}
# Records of github:thunlp/TritonBench (pinned commit below) that our judge classed `{cls}` when triaged by
# benchmarks/tritonbench/triage.py (kmedic check --tier light, CPU interpreter). No third-party code here:
# `python benchmarks/tritonbench/build.py --snapshot <git dir> --corpus {corpus}` writes the case folders.
# looked_at_for_rules: nobody read these candidates before the first measurement (issue 16's split).
snapshot_commit = "{commit}"
"""


def case_id(row: dict[str, Any]) -> str:
    return f"tb_{row['op']}_{row['model']}_r{row['record']:04d}"


def select(rows: list[dict[str, Any]], cls: str, limit: int, per_op: int) -> list[dict[str, Any]]:
    """Up to `limit` rows of class `cls`, at most `per_op` per operator, error classes interleaved."""
    pool = sorted((r for r in rows if r["class"] == cls), key=lambda r: (r["op"], r["file"], r["record"]))
    by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in pool:
        by_class[r["error_class"]].append(r)
    chosen: list[dict[str, Any]] = []
    per: Counter[str] = Counter()
    while len(chosen) < limit and any(by_class.values()):
        for key in sorted(by_class):
            while by_class[key]:
                r = by_class[key].pop(0)
                if per[r["op"]] < per_op:
                    chosen.append(r)
                    per[r["op"]] += 1
                    break
            if len(chosen) >= limit:
                break
    return sorted(chosen, key=case_id)


def write_manifest(path: Path, rows: list[dict[str, Any]], title: str, cls: str, corpus: str) -> None:
    """The manifest of `rows`; a case already marked looked-at in the existing manifest stays marked."""
    seen = set()
    if path.exists():
        seen = {c["id"] for c in build.load_manifest(path) if c["looked_at_for_rules"]}
    text = MANIFEST_HEADER.format(title=title, cls=cls, corpus=corpus, commit=build.PINNED_COMMIT)
    for r in rows:
        text += (
            f"\n[[case]]\nid = {json.dumps(case_id(r))}\nfile = {json.dumps(r['file'])}\n"
            f"record = {r['record']}\nmodel = {json.dumps(r['model'])}\nop = {json.dumps(r['op'])}\n"
            f"verdict = {json.dumps(r['verdict'])}\nerror_class = {json.dumps(r['error_class'])}\n"
            f"looked_at_for_rules = {'true' if case_id(r) in seen else 'false'}\n"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def not_code(snapshot: Path, row: dict[str, Any]) -> bool:
    """A SyntaxError of a record without Markdown fences: the text was prose with code in it, not code."""
    if "SyntaxError" not in row["error_class"]:
        return False
    local = WORK / "jsonl" / row["file"].replace("/", "__")
    if not local.exists():  # a fresh checkout: the triage's local copies are gone, read the snapshot
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(build.git_show(snapshot, row["file"]))
    record = json.loads(local.read_text().splitlines()[row["record"]])
    return "```" not in record["predict"]


_RANDOM = re.compile(r"\btl\.rand|\btorch\.(?:rand|bernoulli|multinomial)|dropout|philox", re.I)


def draws_random(snapshot: Path, row: dict[str, Any]) -> bool:
    """The operator's reference draws random numbers (seeded dropout, sampling): a generation with another
    valid random stream would read as wrong numbers, so such near-misses stay out of the corpus."""
    bench = build.bench_of(row["file"])
    specs = json.loads(build.SPECS.read_text())
    key = (
        f"G:{row['op']}" if bench == "G" else next(k for k, s in specs.items() if build.op_of(s) == row["op"])
    )
    path = specs[key].get("data_file", f"data/TritonBench_T_v1/{key}.py")
    return _RANDOM.search(_code_only(build.reference_part(build.git_show(snapshot, path)))) is not None


def _code_only(source: str) -> str:
    """`source` without comments and docstrings (a docstring's usage example is not the operator)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body[0] = ast.Pass()
    return ast.unparse(tree)


def manifests(
    snapshot: Path, crashes: int, near_misses: int, per_op: int, near_per_op: int, which: str = "both"
) -> None:
    """Write the crash and/or real-world manifest from triage.jsonl (`which`: crashes, realworld or both)."""
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines()]
    for row in rows:
        if row["class"] == "crash" and not_code(snapshot, row):
            row["class"] = "not_code"
        if row["class"] == "near_miss" and draws_random(snapshot, row):
            row["class"] = "near_miss_random"
    crash_rows = select(rows, "crash", crashes, per_op)
    near_rows = select(rows, "near_miss", near_misses, near_per_op)
    if which in ("crashes", "both"):
        write_manifest(
            build.BENCHMARKS / "crashes" / "manifest.toml",
            crash_rows,
            "Crash corpus (issue 18): generations that fail to compile or run",
            "crash",
            "crashes",
        )
    if which in ("realworld", "both"):
        write_manifest(
            build.BENCHMARKS / "realworld" / "manifest.toml",
            near_rows,
            "Real-world near-miss corpus (issue 16): generations that run and compute wrong numbers",
            "near_miss",
            "realworld",
        )
    print(f"{which}: {len(crash_rows)} crashes, {len(near_rows)} near-misses selected")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True, type=Path)
    parser.add_argument(
        "--files", default="", help="comma-separated JSONL paths (or folders/) in the snapshot"
    )
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=150.0)
    parser.add_argument("--until", default="", help="HH:MM UTC: start no check after this")
    parser.add_argument("--near-misses", type=int, default=45)
    parser.add_argument("--crashes", type=int, default=60)
    parser.add_argument("--limit", type=int, default=0, help="at most this many new checks")
    parser.add_argument("--cli", action="store_true", help="one `kmedic check` process per record (slower)")
    parser.add_argument(
        "--manifests",
        action="store_true",
        help="only write benchmarks/{crashes,realworld}/manifest.toml from triage.jsonl",
    )
    parser.add_argument("--which", choices=["crashes", "realworld", "both"], default="both")
    parser.add_argument("--max-crashes", type=int, default=60)
    parser.add_argument("--max-near-misses", type=int, default=60)
    parser.add_argument("--per-op", type=int, default=1, help="at most this many crash cases of one operator")
    parser.add_argument("--near-per-op", type=int, default=3, help="near-misses per operator, at most")
    args = parser.parse_args(argv)
    if args.manifests:
        manifests(
            args.snapshot, args.max_crashes, args.max_near_misses, args.per_op, args.near_per_op, args.which
        )
        return 0
    # A path ending in "/" stands for every JSONL file of that folder.
    named = [f for f in args.files.split(",") if f] or [DEFAULT_DIR + "/"]
    files = [x for f in named for x in (list_files(args.snapshot, f) if f.endswith("/") else [f])]
    problems = order(prepare(args.snapshot, files))
    done = {}
    if RESULTS.exists():
        for line in RESULTS.read_text().splitlines():
            row = json.loads(line)
            done[(row["file"], row["record"])] = row
    counts = Counter(r["class"] for r in done.values())
    lock = threading.Lock()
    deadline = None
    if args.until:
        hh, mm = (int(x) for x in args.until.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        deadline = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    todo = [p for p in problems if (p["file"], p["record"]) not in done]
    if args.limit:
        todo = todo[: args.limit]
    print(f"{len(problems)} problems, {len(done)} already triaged, {len(todo)} to go", flush=True)

    def enough() -> bool:
        late = deadline is not None and dt.datetime.now(dt.timezone.utc) >= deadline
        return late or (counts["near_miss"] >= args.near_misses and counts["crash"] >= args.crashes)

    def one(p: dict[str, Any]) -> None:
        if enough():
            return
        folder = Path(p["folder"])
        report = check(folder, args.timeout) if args.cli else check_in_process(folder)
        cls, error_class = classify(report)
        row = {
            **{k: p[k] for k in ("file", "record", "model", "op")},
            "verdict": report.get("verdict"),
            "class": cls,
            "error_class": error_class,
            "score": report.get("score"),
            "wall_s": report.get("wall_s"),
            "error": first_error(report).strip().splitlines()[-1][:300]
            if first_error(report).strip()
            else "",
        }
        with lock:
            counts[cls] += 1
            with RESULTS.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"[{sum(counts.values())}] {p['model']} r{p['record']} {p['op']}: {cls} ({error_class})"
                f" {row['wall_s']}s  {dict(counts)}",
                flush=True,
            )

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        list(pool.map(one, todo))
    print(json.dumps(dict(counts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
