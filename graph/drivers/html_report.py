"""Self-contained HTML reports: one page per repair (verdict, diff, the graph's path, error heatmaps) and an
index page for a batch. No network: CSS is inline and images are PNG data URIs.

The heatmaps need the candidate's actual outputs, so candidate and reference run in the sandbox (the
evaluator's warm pool, the same child-side jobs the evaluator uses); only plain tensors come back here.
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import Any

import torch
from kernel_medic.graph.config import RepairConfig
from kernel_medic.tools.evaluation.cases import cases_for_tier, rewrite_constants
from kernel_medic.tools.evaluation.evaluate import CANDIDATE_JOB, REFERENCE_JOB, Evaluator
from kernel_medic.tools.evaluation.mismatch import Tolerance, tolerance_for
from kernel_medic.tools.evaluation.problem import Problem, load_problem
from kernel_medic.tools.sandbox.pool import SandboxLimits
from kernel_medic.tools.trace import read_trace

PathLike = str | os.PathLike[str]
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:72em;color:#222}
h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:.2em .7em;border-radius:.3em;color:#fff;font-weight:bold}
.repaired{background:#2a7d2e}.unrepaired{background:#b26b00}.rejected,.failed,.invalid{background:#b3261e}
.running{background:#555}
table{border-collapse:collapse} td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre.diff{background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:.85em}
.add{color:#116329;background:#e6ffec}.del{color:#82071e;background:#ffebe9}.hunk{color:#0550ae}
.path span.node{display:inline-block;padding:.15em .5em;margin:.15em;border:1px solid #ccc;border-radius:.3em}
.maps{display:flex;gap:1.5em;flex-wrap:wrap} figure{margin:0} figcaption{font-size:.9em;color:#555}
"""


def html_for_repair(result: Any, out_dir: PathLike) -> Path:
    """For `kmedic repair --out DIR`: DIR/report.html for a finished run (problem paths from its trace)."""
    return write_html_report(result, Path(out_dir))


def write_html_report(
    result: Any,
    out_dir: PathLike,
    problem: PathLike | tuple[PathLike, PathLike] | None = None,
    *,
    config: RepairConfig | None = None,
    evaluator: Evaluator | None = None,
) -> Path:
    """Write OUT_DIR/report.html for a RepairResult (or its dict). PROBLEM is the problem folder or a
    (reference, candidate) pair; without it the paths recorded in the run's trace are used."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    events = _events(data.get("trace_path", ""))
    start = next((e for e in events if e.get("event") == "run_start"), {})
    if config is None:
        config = RepairConfig.from_dict(start["config"]) if start.get("config") else RepairConfig()
    heatmaps: list[tuple[str, str]] = []
    note = ""
    try:
        loaded = _load(problem, start)
        if loaded is not None:
            heatmaps = _heatmaps(loaded, data, evaluator or _evaluator(config))
    except Exception as exc:  # an unloadable problem still gets its verdict and diff on the page
        note = f"no heatmap: {type(exc).__name__}: {exc}"
    title = data.get("name") or (Path(str(start.get("reference_path", ""))).name or "repair")
    page = _page(title, data, _path(events), heatmaps, note)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def write_index(rows: list[dict[str, Any]], out_dir: PathLike, title: str = "kernel-medic batch") -> Path:
    """OUT_DIR/index.html: one line per case, linking its report (relative links, so the folder can move)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    body = [
        "<table><tr><th>case</th><th>status</th><th>stop reason</th><th>score</th><th>iterations</th>"
        "<th>diff lines</th><th>tokens</th><th>wall s</th></tr>"
    ]
    counts: dict[str, int] = {}
    for row in rows:
        status = str(row.get("status") or "")
        counts[status] = counts.get(status, 0) + 1
        name = html.escape(str(row.get("name", "")))
        report = row.get("report_path") or ""
        if report and Path(report).is_file():
            rel = os.path.relpath(report, out).replace(os.sep, "/")
            name = f'<a href="{html.escape(rel)}">{name}</a>'
        tokens = int(row.get("input_tokens") or 0) + int(row.get("output_tokens") or 0)
        body.append(
            f"<tr><td>{name}</td><td><span class='verdict {_cls(status)}'>{html.escape(status)}</span></td>"
            f"<td>{html.escape(str(row.get('stop_reason') or ''))}</td>"
            f"<td class=num>{float(row.get('score') or 0.0):.4f}</td>"
            f"<td class=num>{int(row.get('iterations') or 0)}</td>"
            f"<td class=num>{int(row.get('diff_lines') or 0)}</td><td class=num>{tokens}</td>"
            f"<td class=num>{float(row.get('wall_s') or 0.0):.1f}</td></tr>"
        )
    body.append("</table>")
    summary = ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(counts.items()))
    page = _document(
        title, f"<h1>{html.escape(title)}</h1><p>{len(rows)} cases: {summary}</p>" + "".join(body)
    )
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


# -- the run's path through the graph ---------------------------------------------------------------------


def _events(trace_path: str) -> list[dict[str, Any]]:
    if not trace_path or not Path(trace_path).is_file():
        return []
    try:
        return read_trace(trace_path)
    except ValueError:
        return []


def _path(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each node the run went through, in order, with its time and the LLM tokens spent inside it."""
    steps: list[dict[str, Any]] = []
    tokens = {"input": 0, "output": 0}
    for event in events:
        kind = event.get("event")
        if kind == "node_start":
            tokens = {"input": 0, "output": 0}
        elif kind == "llm_response":
            tokens["input"] += int(event.get("input_tokens") or 0)
            tokens["output"] += int(event.get("output_tokens") or 0)
        elif kind == "node_end":
            steps.append(
                {
                    "step": event.get("step"),
                    "node": event.get("node"),
                    "duration_s": float(event.get("duration_s") or 0.0),
                    "tokens": dict(tokens),
                }
            )
            tokens = {"input": 0, "output": 0}
    return steps


# -- heatmaps ---------------------------------------------------------------------------------------------


def _load(problem: PathLike | tuple[PathLike, PathLike] | None, start: dict[str, Any]) -> Problem | None:
    if isinstance(problem, tuple):
        return load_problem(problem[0], problem[1])
    if problem is not None:
        return load_problem(problem)
    if start.get("reference_path"):
        return load_problem(start["reference_path"], start.get("candidate_path"))
    return None


def _evaluator(config: RepairConfig) -> Evaluator:
    from kernel_medic.graph.runtime import evaluator_for

    return evaluator_for(config)


def _heatmaps(problem: Problem, data: dict[str, Any], evaluator: Evaluator) -> list[tuple[str, str]]:
    """(caption, PNG data URI) for the candidate before the repair and the best source after it."""
    spec = cases_for_tier("light", problem.config, problem.size_constants)[0]
    limits = SandboxLimits(timeout_s=problem.config.timeout_s)
    pool = evaluator.pool
    ref = pool.run(
        REFERENCE_JOB,
        {
            "source": rewrite_constants(problem.reference_source, dict(spec.size_overrides)),
            "filename": problem.reference_path.name,
            "case": spec.to_dict(),
            "device": evaluator.device,
        },
        limits,
    )
    if ref.status != "ok" or not ref.result or "error" in ref.result:
        raise RuntimeError(f"the reference did not run: {ref.error or (ref.result or {}).get('error')}")
    reference = ref.result
    overrides = {k: Tolerance(*v) for k, v in problem.config.tolerances.items()}
    sources = [("before the repair (candidate)", problem.candidate_source)]
    best = data.get("best_source") or data.get("repaired_source")
    if best and best != problem.candidate_source:
        sources.append((f"after the repair ({data.get('status', '')})", best))
    maps: list[tuple[str, str]] = []
    for label, source in sources:
        outcome = pool.run(
            CANDIDATE_JOB,
            {
                "source": source,
                "filename": problem.candidate_path.name,
                "seed": spec.seed,
                "init_inputs": reference["init_inputs"],
                "inputs": reference["inputs"],
                "state_dict": reference["state_dict"],
                "runs": 1,
                "device": evaluator.device,
            },
            limits,
        )
        result = outcome.result or {}
        if outcome.status != "ok" or "error" in result or not result.get("outputs"):
            err = result.get("error") or {}
            why = f"{err.get('type', outcome.status)}: {err.get('message', outcome.error or '')}"
            maps.append((f"{label}: {spec.name}: did not run ({why})", ""))
            continue
        maps.append(_heatmap(label, spec.name, result["outputs"][0], reference["outputs"][0], overrides))
    return maps


def _heatmap(
    label: str, case: str, candidate: torch.Tensor, reference: torch.Tensor, overrides: dict[str, Tolerance]
) -> tuple[str, str]:
    if candidate.shape != reference.shape:
        return (f"{label}: {case}: shape {tuple(candidate.shape)} vs reference {tuple(reference.shape)}", "")
    tol = tolerance_for(reference.dtype, overrides)
    cand, ref = candidate.detach().double().cpu(), reference.detach().double().cpu()
    err = (cand - ref).abs()
    bad = ~torch.isclose(cand, ref, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    finite = torch.isfinite(err)
    top = float(err[finite].max()) if bool(finite.any()) else 0.0
    # Non-finite errors (NaN/inf outputs) are the worst kind: paint them at the top of the scale.
    err = torch.where(finite, err, torch.full_like(err, top if top > 0 else 1.0))
    grid = _to_2d(err)
    wrong = int(bad.sum())
    nonfinite = int((~finite).sum())
    caption = (
        f"{label}: |candidate - reference| on {case}, output 0 {tuple(reference.shape)}: "
        f"{wrong} of {reference.numel()} elements outside tolerance, max finite error {top:.3g}"
        + (f", {nonfinite} non-finite (NaN/inf, drawn at the top of the scale)" if nonfinite else "")
    )
    return caption, _png_uri(grid, title=f"{wrong}/{reference.numel()} wrong")


def _to_2d(t: torch.Tensor) -> torch.Tensor:
    if t.dim() >= 2:
        return t.reshape(-1, t.shape[-1])
    n = max(1, t.numel())
    width = max(1, int(n**0.5))
    rows = -(-n // width)
    flat = torch.zeros(rows * width, dtype=t.dtype)
    flat[: t.numel()] = t.flatten()
    return flat.reshape(rows, width)


def _png_uri(grid: torch.Tensor, title: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    rows, cols = grid.shape
    aspect = min(4.0, max(0.25, rows / max(cols, 1)))
    fig = Figure(figsize=(6.0, max(1.6, 6.0 * aspect)), dpi=80)
    ax = fig.add_subplot()
    vmax = float(grid.max()) if grid.numel() else 0.0
    image = ax.imshow(
        grid.numpy(),
        cmap="magma",
        aspect="auto",
        interpolation="nearest",
        vmin=0.0,
        vmax=vmax if vmax > 0 else 1.0,
    )
    ax.set_title(title)
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    fig.colorbar(image, ax=ax, label="|error|")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


# -- the page ---------------------------------------------------------------------------------------------


def _cls(status: str) -> str:
    return status if status in ("repaired", "unrepaired", "rejected", "failed", "invalid", "running") else ""


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        cls = ""
        if line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+") and not line.startswith("+++"):
            cls = "add"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "del"
        text = html.escape(line)
        lines.append(f'<span class="{cls}">{text}</span>' if cls else text)
    return "\n".join(lines)


def _page(
    title: str,
    data: dict[str, Any],
    steps: list[dict[str, Any]],
    heatmaps: list[tuple[str, str]],
    note: str,
) -> str:
    status = str(data.get("status", ""))
    tokens = data.get("tokens") or {}
    integrity = data.get("integrity") or {}
    verdict = integrity.get("verdict", "not_audited") if isinstance(integrity, dict) else str(integrity)
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p id=verdict><span class='verdict {_cls(status)}'>{html.escape(status.upper())}</span> "
        f"stop reason: {html.escape(str(data.get('stop_reason', '')))} &middot; score "
        f"{float(data.get('score') or 0.0):.4f} &middot; integrity: {html.escape(str(verdict))}</p>",
        "<table>"
        f"<tr><th>iterations</th><td class=num>{int(data.get('iterations') or 0)}</td></tr>"
        f"<tr><th>LLM calls</th><td class=num>{int(data.get('llm_calls') or 0)}</td></tr>"
        f"<tr><th>tokens in / out</th><td class=num>{int(tokens.get('input', 0))} / "
        f"{int(tokens.get('output', 0))}</td></tr>"
        f"<tr><th>graph wall time</th><td class=num>{float(data.get('wall_s') or 0.0):.2f} s</td></tr>"
        f"<tr><th>changed lines</th><td class=num>{int(data.get('diff_lines') or 0)}</td></tr>"
        "</table>",
    ]
    if data.get("error"):
        parts.append(f"<p class=error>{html.escape(str(data['error']))}</p>")
    crash = data.get("crash")
    if isinstance(crash, dict) and crash.get("class"):
        code = html.escape(str(crash.get("code", "")))
        line = f"line {crash['line']}: <code>{code}</code> " if crash.get("line") else ""
        exc = html.escape(f"{crash.get('exception', '')}: {crash.get('message', '')}")
        klass = html.escape(str(crash["class"]))
        parts.append(f"<h2>Crash</h2><p id=crash><b>{klass}</b> at {line}&mdash; {exc}</p>")
    if data.get("warnings"):
        items = "".join(f"<li>{html.escape(str(w))}</li>" for w in data["warnings"])
        parts.append(f"<h2>Warnings (not part of the verdict)</h2><ul id=warnings>{items}</ul>")
    parts.append("<h2>Diff</h2>")
    diff = str(data.get("diff") or "")
    parts.append(f"<pre class=diff id=diff>{_diff_html(diff) if diff else '(no change)'}</pre>")
    parts.append("<h2>Where the outputs differed</h2>")
    if heatmaps:
        figures = []
        for caption, uri in heatmaps:
            image = f'<img src="{uri}" alt="{html.escape(caption)}">' if uri else ""
            figures.append(f"<figure>{image}<figcaption>{html.escape(caption)}</figcaption></figure>")
        parts.append(f"<div class=maps>{''.join(figures)}</div>")
    else:
        parts.append(f"<p>{html.escape(note or 'no heatmap (problem files not available)')}</p>")
    parts.append("<h2>Path through the graph</h2>")
    if steps:
        parts.append(
            "<p class=path>"
            + " &rarr; ".join(f"<span class=node>{html.escape(str(s['node']))}</span>" for s in steps)
            + "</p>"
        )
        rows = "".join(
            f"<tr><td class=num>{s['step']}</td><td>{html.escape(str(s['node']))}</td>"
            f"<td class=num>{s['duration_s']:.3f}</td><td class=num>{s['tokens']['input']}</td>"
            f"<td class=num>{s['tokens']['output']}</td></tr>"
            for s in steps
        )
        total = sum(s["duration_s"] for s in steps)
        parts.append(
            "<table><tr><th>step</th><th>node</th><th>seconds</th><th>tokens in</th><th>tokens out</th></tr>"
            f"{rows}<tr><th></th><th>total</th><td class=num>{total:.3f}</td>"
            f"<td class=num>{sum(s['tokens']['input'] for s in steps)}</td>"
            f"<td class=num>{sum(s['tokens']['output'] for s in steps)}</td></tr></table>"
        )
    else:
        parts.append("<p>(no trace)</p>")
    if data.get("trace_path"):
        parts.append(f"<p>trace: <code>{html.escape(str(data['trace_path']))}</code></p>")
    return _document(f"kernel-medic: {title}", "".join(parts))


def _document(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )
