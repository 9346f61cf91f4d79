"""Sandbox-side jobs of the probes and of intermediate capture (run only in a worker's forked child).

Like `tools/evaluation/jobs.py`: the model is built under the case's seed, results go back as plain tensors,
and every judgement is made by the caller. One model per child: a reference and a candidate never share a
process.
"""

from __future__ import annotations

from typing import Any

import torch
from kernel_medic.tools.evaluation.jobs import (
    PhaseError,
    _adopt_weights,
    _canary_allocations,
    _describe,
    _drain_notes,
    _import_source,
    _phase,
    _run,
)

CAPTURE_REGISTRY = "_KMEDIC_CAPTURE"


def _cast(x: Any, dtype: torch.dtype | None) -> Any:
    if dtype is not None and isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(dtype)
    return x


def _build(payload: dict[str, Any]) -> tuple[Any, torch.nn.Module, list[Any], str]:
    device = payload.get("device", "cpu")
    module = _phase("import", lambda: _import_source(payload["source"], payload["filename"]))
    cls_name = payload.get("model", "ModelNew")
    seed = int(payload.get("seed", 0))
    torch.manual_seed(seed)
    init_inputs = payload.get("init_inputs")
    if init_inputs is None:
        init_inputs = _phase("init", lambda: list(module.get_init_inputs()))
    torch.manual_seed(seed)
    model = _phase("init", lambda: getattr(module, cls_name)(*init_inputs).to(device))
    weights = "none"
    if payload.get("state_dict") is not None:
        weights = _phase("init", lambda: _adopt_weights(model, payload["state_dict"]))
    dtype = getattr(torch, payload["dtype"]) if payload.get("dtype") else None
    if dtype is not None:
        model = model.to(dtype)
    return module, model, init_inputs, weights


def run_model(payload: dict[str, Any]) -> dict[str, Any]:
    """Run Model or ModelNew (payload["model"]) once on the given inputs.

    payload: source, filename, model, seed, init_inputs (None: the module's own), inputs, state_dict (None:
    keep the seeded weights), dtype (None, or e.g. "float16": model and float inputs cast), device.
    Returns outputs, and for the reference its init_inputs and state_dict. Allocations are NaN-poisoned so
    unwritten output shows.
    """
    device = payload.get("device", "cpu")
    dtype = getattr(torch, payload["dtype"]) if payload.get("dtype") else None
    try:
        _module, model, init_inputs, _weights = _build(payload)
        inputs = [_cast(x, dtype) for x in payload["inputs"]]
        with _canary_allocations([]):
            outputs = _phase("forward", lambda: _run(model, inputs, device))
    except PhaseError as err:
        return {"error": _describe(err), "notes": _drain_notes()}
    return {
        "outputs": outputs,
        "init_inputs": init_inputs,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "notes": _drain_notes(),
    }


def capture_run(payload: dict[str, Any]) -> dict[str, Any]:
    """Run an instrumented ModelNew once; return its outputs and the debug buffers its launches filled.

    payload: as `run_model`. The instrumented module appends (name, buffer, programs, tile shape) to its
    module-level `_KMEDIC_CAPTURE` list at every launch (see tools/diagnosis/capture.py).
    """
    device = payload.get("device", "cpu")
    try:
        module, model, _init, _weights = _build(payload)
        with _canary_allocations([]):
            outputs = _phase("forward", lambda: _run(model, list(payload["inputs"]), device))
        records = getattr(module, CAPTURE_REGISTRY, [])
    except PhaseError as err:
        return {"error": _describe(err), "notes": _drain_notes()}
    captured = [
        {
            "name": str(name),
            "values": buf.detach().cpu().clone(),
            "programs": int(programs),
            "shape": [int(s) for s in shape],
        }
        for name, buf, programs, shape in records
    ]
    return {"outputs": outputs, "captured": captured, "notes": _drain_notes()}
