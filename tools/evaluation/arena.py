"""Canary evidence the caller reads itself (cpu device).

On the candidate's first run its inputs and its plain `torch.empty*` allocations live in one file the caller
lays out (`layout`) and fills (`initial_bytes`), the pool hands to the job (`WorkerPool.run(...,
evidence=...)`) and reads back through its own file descriptor once the job is over. The job maps the file
(`jobs.Arena`) and only copies inputs in and carves allocations; which bytes are canaries, and whether they
are intact, the caller decides from the bytes it read (`apply`) — not from pads the candidate's process
reports, which a candidate that patches the harness could forge.

Inputs sit at offsets the caller chose, in padding the caller wrote. Allocations go, in order, into an area
the caller filled with ALLOC_FILL; the job reports where it put them, and the caller checks each one's pads
and that every byte of the area outside the reported buffers is still ALLOC_FILL — so a forged list cannot
hide a write next to a real buffer without also claiming pads that hold the right canary.
"""

from __future__ import annotations

from typing import Any

import torch
from kernel_medic.tools.evaluation.jobs import ARENA_ALIGN as ALIGN
from kernel_medic.tools.evaluation.jobs import CANARY_PAD, arena_align, canary_bits

ALLOC_FILL = 0x5A  # = the uint8 allocation canary: a gap reads as a uint8 pad
MIN_ALLOC_AREA = 1 << 20
GAP_LABEL = "allocation area"


def _span(x: torch.Tensor) -> int:
    return 1 + sum((s - 1) * st for s, st in zip(x.shape, x.stride()))


def layout(inputs: list[Any], outputs: list[torch.Tensor]) -> dict[str, Any]:
    """Where each canary-padded input goes, and the allocation area after them (a function of the case)."""
    slots, offset, data_bytes = [], 0, 0
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or x.numel() == 0 or canary_bits(x.dtype, "input") is None:
            continue
        span = _span(x)
        slots.append({"index": i, "offset": offset, "span": span, "dtype": _name(x.dtype)})
        offset = arena_align(offset + (span + 2 * CANARY_PAD) * x.element_size())
        data_bytes += span * x.element_size()
    data_bytes += sum(t.numel() * t.element_size() for t in outputs if isinstance(t, torch.Tensor))
    area = arena_align(max(MIN_ALLOC_AREA, 4 * data_bytes + 32 * 2 * CANARY_PAD * 8))
    return {"inputs": slots, "alloc_start": offset, "alloc_end": offset + area}


def initial_bytes(plan: dict[str, Any]) -> bytes:
    """The file's content before the job: input pads hold the input canary, the allocation area ALLOC_FILL."""
    arena = torch.full((plan["alloc_end"],), ALLOC_FILL, dtype=torch.uint8)
    for slot in plan["inputs"]:
        dtype = getattr(torch, slot["dtype"])
        view_dtype, pattern = canary_bits(dtype, "input")  # type: ignore[misc]
        size = (slot["span"] + 2 * CANARY_PAD) * dtype.itemsize
        arena[slot["offset"] : slot["offset"] + size].view(view_dtype).fill_(pattern)
    return arena.numpy().tobytes()


def apply(result: dict[str, Any], plan: dict[str, Any], evidence: bytes | None) -> dict[str, Any]:
    """``result`` with canaries and arena inputs as the caller reads them from ``evidence``.

    Pads of non-arena buffers (allocations that did not fit) stay as the job reported them.
    """
    result = dict(result)
    reported = [p for p in result.get("canaries") or [] if isinstance(p, dict)]
    if evidence is None or len(evidence) != int(plan["alloc_end"]):
        # The file the caller handed over is gone, resized or unreadable: nothing can be vouched for.
        lost = {"label": "canary file", "kind": "alloc", "before": torch.zeros(1, dtype=torch.uint8)}
        result["canaries"] = [*reported, {**lost, "after": torch.zeros(0, dtype=torch.uint8)}]
        return result
    arena = torch.frombuffer(bytearray(evidence), dtype=torch.uint8)
    pads: list[dict[str, Any]] = []
    inputs_after = list(result.get("inputs_after") or [])
    for slot in plan["inputs"]:
        dtype = getattr(torch, slot["dtype"])
        span, start = int(slot["span"]), int(slot["offset"])
        buf = arena[start : start + (span + 2 * CANARY_PAD) * dtype.itemsize].view(dtype)
        label = f"input {slot['index']}"
        pads.append(_pads(label, "input", buf, span))
        index = int(slot["index"])
        if index < len(inputs_after) and isinstance(inputs_after[index], torch.Tensor):
            shaped = inputs_after[index]
            # as_strided's offset counts from the start of the storage, not of the slice.
            offset = buf.storage_offset() + CANARY_PAD
            inputs_after[index] = buf.as_strided(shaped.shape, shaped.stride(), offset)
    cursor, end = int(plan["alloc_start"]), int(plan["alloc_end"])
    for entry in result.get("arena_table") or []:
        try:
            dtype = getattr(torch, str(entry["dtype"]).removeprefix("torch."))
            start, numel, label = int(entry["offset"]), int(entry["numel"]), str(entry["label"])[:60]
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        if not isinstance(dtype, torch.dtype) or canary_bits(dtype, "alloc") is None:
            continue
        size = (numel + 2 * CANARY_PAD) * dtype.itemsize
        if numel < 1 or start < cursor or start % ALIGN or start + size > end:
            continue  # not a buffer the harness could have made: its bytes are judged as the area's
        _gap(pads, arena[cursor:start])
        buf = arena[start : start + size].view(dtype)
        pads.append(_pads(label, "alloc", buf, numel))
        cursor = start + size
    _gap(pads, arena[cursor:end])
    result["canaries"] = reported + pads
    result["inputs_after"] = inputs_after
    return result


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _pads(label: str, kind: str, buf: torch.Tensor, numel: int) -> dict[str, Any]:
    return {"label": label, "kind": kind, "before": buf[:CANARY_PAD], "after": buf[CANARY_PAD + numel :]}


def _gap(pads: list[dict[str, Any]], gap: torch.Tensor) -> None:
    """Area bytes outside every reported buffer: written ones show as damage after a uint8 'buffer'."""
    if gap.numel() and bool((gap != ALLOC_FILL).any()):
        pads.append({"label": GAP_LABEL, "kind": "alloc", "before": gap[:0], "after": gap})
