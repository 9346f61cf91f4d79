"""Probe inputs that separate bug hypotheses, run in the sandbox against the reference.

Each probe feeds the reference and the candidate the same crafted inputs and reads the difference:
arange inputs show which input element each output came from (index mapping), ones show counting and
normalisation, large magnitudes show overflow and missing max subtraction, block-multiple vs ragged shapes
show tail handling, fp16 vs fp32 shows accumulation precision. A finding is
`{probe, result, supports: [bug classes], refutes: [bug classes]}`, or `{probe, skipped: reason}`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import torch
from kernel_medic.tools.evaluation.cases import CaseSpec, make_noncontiguous, rewrite_constants
from kernel_medic.tools.evaluation.mismatch import Comparison, compare, tolerance_for
from kernel_medic.tools.evaluation.problem import Problem
from kernel_medic.tools.sandbox.pool import JobOutcome, SandboxLimits, WorkerPool

REFERENCE_JOB = "kernel_medic.tools.evaluation.jobs:reference_case"
RUN_JOB = "kernel_medic.tools.diagnosis.jobs:run_model"
PROBES = ("arange", "ones", "large", "shapes", "precision")
LARGE_SCALE = 1000.0
_INDEX_RELATIONS = ("transposed", "shifted", "rows_permuted", "periodic", "equals_input")
_TAIL_PATTERNS = ("tail_block", "trailing")
_COVERAGE_RELATIONS = ("untouched_region", "zero_region", "garbage_region")

Finding = dict[str, Any]


class _Base:
    """The reference's own inputs, weights and outputs for the problem's first seed."""

    def __init__(self, result: dict[str, Any], seed: int) -> None:
        self.seed = seed
        self.init_inputs: list[Any] = result["init_inputs"]
        self.inputs: list[Any] = result["inputs"]
        self.outputs: list[torch.Tensor] = result["outputs"]
        self.state_dict: dict[str, torch.Tensor] = result["state_dict"]


class _Runner:
    def __init__(self, problem: Problem, pool: WorkerPool, device: str, limits: SandboxLimits) -> None:
        self.problem, self.pool, self.device, self.limits = problem, pool, device, limits

    def submit(
        self,
        model: str,
        inputs: list[Any],
        base: _Base,
        dtype: str | None = None,
        reference_source: str | None = None,
    ) -> Future[JobOutcome]:
        reference = model == "Model"
        payload = {
            "source": (reference_source or self.problem.reference_source)
            if reference
            else self.problem.candidate_source,
            "filename": (self.problem.reference_path if reference else self.problem.candidate_path).name,
            "model": model,
            "seed": base.seed,
            "init_inputs": base.init_inputs,
            "inputs": inputs,
            "state_dict": base.state_dict,
            "dtype": dtype,
            "device": self.device,
        }
        return self.pool.submit(RUN_JOB, payload, self.limits)

    def reference_case(self, spec: CaseSpec, source: str) -> Future[JobOutcome]:
        payload = {
            "source": source,
            "filename": self.problem.reference_path.name,
            "case": spec.to_dict(),
            "device": self.device,
        }
        return self.pool.submit(REFERENCE_JOB, payload, self.limits)


def _outputs(outcome: JobOutcome, who: str) -> list[torch.Tensor] | str:
    """The run's outputs, or a one-line reason there are none."""
    if outcome.status != "ok" or outcome.result is None:
        return f"{who}: {outcome.status}: {outcome.error or ''}".strip()
    if "error" in outcome.result:
        err = outcome.result["error"]
        return f"{who}: {err['phase']}: {err['type']}: {err['message']}"
    return list(outcome.result["outputs"])


def _compare_all(
    cand: list[torch.Tensor], ref: list[torch.Tensor], inputs: list[Any]
) -> list[Comparison] | str:
    if len(cand) != len(ref):
        return f"candidate returned {len(cand)} outputs, reference {len(ref)}"
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    return [compare(c, r, tolerance_for(r.dtype), tensors) for c, r in zip(cand, ref)]


def _summary(comps: list[Comparison]) -> dict[str, Any]:
    worst = min(comps, key=lambda c: c.correct / max(c.numel, 1))
    return {
        "verdict": "pass" if all(c.verdict == "pass" for c in comps) else worst.verdict,
        "pattern": worst.pattern,
        "relationships": sorted({r for c in comps for r in c.relationships}),
        "mismatch_fraction": round(worst.mismatch_fraction, 4),
        "max_abs_err": _finite(worst.max_abs_err),
        "nan_where_ref_finite": sum(c.nan_where_ref_finite + c.inf_where_ref_finite for c in comps),
    }


def _constant_ratio(cand: list[torch.Tensor], ref: list[torch.Tensor]) -> float | None:
    """candidate / reference when it is one constant over every nonzero reference element (a count error)."""
    ratios = []
    for c, r in zip(cand, ref):
        if c.shape != r.shape or not c.is_floating_point():
            return None
        nz = r.double().abs() > 1e-6
        ratios.append((c.double()[nz] / r.double()[nz]).flatten())
    values = torch.cat(ratios) if ratios else torch.empty(0)
    if values.numel() == 0 or not bool(torch.isfinite(values).all()):
        return None
    mid = float(values.median())
    return round(mid, 6) if bool(((values - mid).abs() <= 1e-3 * max(abs(mid), 1e-6)).all()) else None


def _finite(value: float) -> float | None:
    return round(value, 6) if value == value and abs(value) != float("inf") else None


def _kinds(relationships: Sequence[str]) -> set[str]:
    return {r.split(":", 1)[0].split(".", 1)[-1] for r in relationships}


def _float_map(inputs: list[Any], fn: Callable[[torch.Tensor], torch.Tensor]) -> list[Any]:
    return [fn(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def arange_like(x: torch.Tensor) -> torch.Tensor:
    """Distinct values in [0, 1) that encode each element's flat index, same shape and dtype."""
    return (torch.arange(x.numel(), dtype=torch.float64) / max(x.numel(), 1)).reshape(x.shape).to(x.dtype)


# ---------------------------------------------------------------------------------------------------------
# Interpretation: one function per probe, from the comparison to supports/refutes


def _judge_arange(summary: dict[str, Any], layout: str) -> Finding:
    kinds = _kinds(summary["relationships"])
    supports: list[str] = []
    refutes: list[str] = []
    if summary["verdict"] == "pass":
        refutes = ["strides_layout"] if layout == "noncontiguous" else []
    elif layout == "noncontiguous":
        # Same values as the contiguous probe, other strides: whatever goes wrong is the layout's doing.
        supports = ["strides_layout"]
    else:
        if kinds & set(_INDEX_RELATIONS) or summary["pattern"] in ("periodic", "columns"):
            supports.append("strides_layout")
        if summary["pattern"] in _TAIL_PATTERNS or kinds & {"out_of_bounds_write"}:
            supports += ["tail_mask", "grid_coverage"]
        if kinds & set(_COVERAGE_RELATIONS) and "grid_coverage" not in supports:
            supports.append("grid_coverage")
        if "tail_mask" in supports and "strides_layout" not in supports:
            refutes.append("strides_layout")
        if "strides_layout" in supports and not {"tail_mask", "grid_coverage"} & set(supports):
            refutes += ["tail_mask", "grid_coverage"]
    return {"probe": f"arange_{layout}", "result": summary, "supports": supports, "refutes": refutes}


def _judge_ones(summary: dict[str, Any]) -> Finding:
    if summary["verdict"] == "pass":
        return {"probe": "ones", "result": summary, "supports": [], "refutes": ["normalisation"]}
    ratio = [r for r in summary["relationships"] if r.split(".", 1)[-1].startswith("constant_ratio")]
    ratio = ratio or ([summary["ratio"]] if "ratio" in summary else [])
    supports = ["normalisation"] + ([] if ratio else ["operator_misread"])
    return {"probe": "ones", "result": summary, "supports": supports, "refutes": []}


def _judge_large(summary: dict[str, Any], base_ok: bool) -> Finding:
    if summary["verdict"] == "pass":
        return {"probe": "large", "result": summary, "supports": [], "refutes": ["numerical_stability"]}
    if summary["nan_where_ref_finite"]:
        supports = ["numerical_stability", "accumulation_precision"]
    elif base_ok:
        supports = ["accumulation_precision", "numerical_stability"]
    else:
        supports = []
    return {"probe": "large", "result": summary, "supports": supports, "refutes": []}


def _judge_shapes(aligned: dict[str, Any], ragged: dict[str, Any], sizes: dict[str, Any]) -> Finding:
    result = {"aligned": aligned["verdict"], "ragged": ragged["verdict"], **sizes}
    tail_classes = ["tail_mask", "grid_coverage", "k_loop", "neutral_element", "normalisation"]
    if aligned["verdict"] == "pass" and ragged["verdict"] != "pass":
        refutes = ["strides_layout", "accumulation_precision", "numerical_stability", "operator_misread"]
        return {"probe": "shapes", "result": result, "supports": tail_classes, "refutes": refutes}
    if aligned["verdict"] == "pass":
        return {"probe": "shapes", "result": result, "supports": [], "refutes": tail_classes[:3]}
    return {"probe": "shapes", "result": result, "supports": [], "refutes": ["tail_mask", "grid_coverage"]}


# ---------------------------------------------------------------------------------------------------------
# Driver


def _aligned_sizes(constants: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(block-multiple sizes, ragged sizes) for the problem's size constants (those of 8 and more)."""
    aligned: dict[str, int] = {}
    for name, value in constants.items():
        if value >= 8:
            p = 1 << (min(value, 256).bit_length() - 1)
            aligned[name] = max(p, 16)
    ragged = {name: value - 3 for name, value in aligned.items()}
    return aligned, ragged


def run_probes(
    problem: Problem,
    pool: WorkerPool,
    device: str = "cpu",
    probes: Sequence[str] = PROBES,
    timeout_s: float = 30.0,
) -> list[Finding]:
    """Run the named probes of the problem's candidate; every probe yields one finding (maybe skipped)."""
    unknown = [p for p in probes if p not in PROBES]
    if unknown:
        raise ValueError(f"unknown probe(s): {', '.join(unknown)}")
    limits = SandboxLimits(timeout_s=timeout_s)
    runner = _Runner(problem, pool, device, limits)
    seed = problem.config.seeds[0]
    base_outcome = runner.reference_case(CaseSpec(name=f"seed{seed}", seed=seed), problem.reference_source)
    base_ref = base_outcome.result()
    if base_ref.status != "ok" or base_ref.result is None or "error" in base_ref.result:
        return [{"probe": p, "skipped": "the reference does not run"} for p in probes]
    base = _Base(base_ref.result, seed)

    # Submit every job first, judge afterwards: the pool runs them side by side.
    pending: dict[str, list[Future[JobOutcome]]] = {}
    inputs_of: dict[str, list[Any]] = {}
    value_probes: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "arange_contiguous": arange_like,
        "arange_noncontiguous": lambda x: make_noncontiguous(arange_like(x)),
        "ones": torch.ones_like,
        "large": lambda x: x * LARGE_SCALE,
    }
    wanted = {
        "arange_contiguous": "arange" in probes,
        "arange_noncontiguous": "arange" in probes,
        "ones": "ones" in probes,
        "large": "large" in probes,
    }
    for name, fn in value_probes.items():
        if wanted[name]:
            inputs_of[name] = _float_map(base.inputs, fn)
            pending[name] = [
                runner.submit("Model", inputs_of[name], base),
                runner.submit("ModelNew", inputs_of[name], base),
            ]
    if "large" in probes or "precision" in probes:
        pending["base"] = [runner.submit("ModelNew", base.inputs, base)]
    if "precision" in probes:
        half = _float_map(base.inputs, lambda x: x.half())
        inputs_of["precision"] = half
        pending["precision"] = [
            runner.submit("Model", _float_map(half, lambda x: x.float()), base),  # exact answer on fp16 data
            runner.submit("Model", half, base, dtype="float16"),
            runner.submit("ModelNew", half, base, dtype="float16"),
        ]
    aligned, ragged = _aligned_sizes(problem.size_constants)
    shape_refs: dict[str, Future[JobOutcome]] = {}
    if "shapes" in probes and aligned:
        for label, sizes in (("aligned", aligned), ("ragged", ragged)):
            spec = CaseSpec(name=label, seed=seed, size_overrides=tuple(sizes.items()))
            shape_refs[label] = runner.reference_case(
                spec, rewrite_constants(problem.reference_source, sizes)
            )

    findings: list[Finding] = []
    base_ok = False
    if "base" in pending:
        outs = _outputs(pending["base"][0].result(), "candidate")
        comps = _compare_all(outs, base.outputs, base.inputs) if not isinstance(outs, str) else outs
        base_ok = not isinstance(comps, str) and all(c.verdict == "pass" for c in comps)

    def pair(name: str) -> dict[str, Any] | str:
        ref = _outputs(pending[name][0].result(), "reference")
        cand = _outputs(pending[name][1].result(), "candidate")
        if isinstance(ref, str):
            return ref
        if isinstance(cand, str):
            return cand
        if not all(bool(torch.isfinite(t).all()) for t in ref if t.is_floating_point()):
            return "reference output is not finite on these inputs"
        comps = _compare_all(cand, ref, inputs_of[name])
        if isinstance(comps, str):
            return comps
        summary = _summary(comps)
        ratio = _constant_ratio(cand, ref)
        if ratio is not None and summary["verdict"] != "pass":
            summary["ratio"] = ratio
        return summary

    if "arange" in probes:
        for layout in ("contiguous", "noncontiguous"):
            summary = pair(f"arange_{layout}")
            findings.append(
                _judge_arange(summary, layout)
                if isinstance(summary, dict)
                else {"probe": f"arange_{layout}", "skipped": summary}
            )
    if "ones" in probes:
        summary = pair("ones")
        findings.append(
            _judge_ones(summary) if isinstance(summary, dict) else {"probe": "ones", "skipped": summary}
        )
    if "large" in probes:
        summary = pair("large")
        findings.append(
            _judge_large(summary, base_ok)
            if isinstance(summary, dict)
            else {"probe": "large", "skipped": summary}
        )
    if "shapes" in probes:
        findings.append(_shapes_finding(runner, base, shape_refs, aligned, ragged))
    if "precision" in probes:
        findings.append(_precision_finding(pending["precision"], base_ok))
    return findings


def _shapes_finding(
    runner: _Runner,
    base: _Base,
    refs: dict[str, Future[JobOutcome]],
    aligned: dict[str, int],
    ragged: dict[str, int],
) -> Finding:
    if not refs:
        return {"probe": "shapes", "skipped": "the reference has no size constants to vary"}
    runs: dict[str, tuple[list[Any], list[torch.Tensor], Future[JobOutcome]]] = {}
    for label, fut in refs.items():
        outcome = fut.result()
        ref = _outputs(outcome, "reference")
        if isinstance(ref, str):
            return {"probe": "shapes", "skipped": f"{label}: {ref}"}
        assert outcome.result is not None
        inputs = outcome.result["inputs"]
        shaped = _Base(outcome.result, base.seed)
        runs[label] = (inputs, ref, runner.submit("ModelNew", inputs, shaped))
    summaries: dict[str, dict[str, Any]] = {}
    for label, (inputs, ref, fut) in runs.items():
        cand = _outputs(fut.result(), "candidate")
        comps = cand if isinstance(cand, str) else _compare_all(cand, ref, inputs)
        summaries[label] = (
            {"verdict": "runtime_error", "error": comps} if isinstance(comps, str) else _summary(comps)
        )
    return _judge_shapes(
        summaries["aligned"], summaries["ragged"], {"sizes": aligned, "ragged_sizes": ragged}
    )


def _precision_finding(futures: list[Future[JobOutcome]], base_ok: bool) -> Finding:
    exact = _outputs(futures[0].result(), "reference fp32")
    ref16 = _outputs(futures[1].result(), "reference fp16")
    cand16 = _outputs(futures[2].result(), "candidate fp16")
    for got in (exact, ref16, cand16):
        if isinstance(got, str):
            return {"probe": "precision", "skipped": got}
    assert not isinstance(exact, str) and not isinstance(ref16, str) and not isinstance(cand16, str)
    if len(cand16) != len(exact) or any(c.shape != e.shape for c, e in zip(cand16, exact)):
        return {"probe": "precision", "skipped": "candidate outputs differ in number or shape at fp16"}

    def err(outs: list[torch.Tensor]) -> float:
        worst = 0.0
        for o, e in zip(outs, exact):
            d = (o.double() - e.double()).abs()
            d = torch.where(torch.isnan(d), torch.full_like(d, float("inf")), d)
            worst = max(worst, float(d.max()) if d.numel() else 0.0)
        return worst

    cand_err, ref_err = err(cand16), err(ref16)
    scale = max((float(e.double().abs().max()) for e in exact if e.numel()), default=1.0)
    # The candidate may be as imprecise as PyTorch's own fp16 path, plus one fp16 ulp of the output scale.
    allowed = 4 * ref_err + 1e-3 * max(scale, 1.0)
    result = {
        "candidate_fp16_err": _finite(cand_err),
        "reference_fp16_err": _finite(ref_err),
        "allowed": round(allowed, 6),
        "fp32_passes": base_ok,
    }
    if cand_err <= allowed:
        return {"probe": "precision", "result": result, "supports": [], "refutes": ["accumulation_precision"]}
    supports = ["accumulation_precision"] if base_ok else []
    return {"probe": "precision", "result": result, "supports": supports, "refutes": []}
