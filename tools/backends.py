"""Device backends: what a worker sets up before it imports triton, and how it talks to the device.

SKELETON (lead) — helper C owns this file and replaces it; the interface below is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    name: str
    torch_device: str

    def worker_env(self) -> dict[str, str]:
        return {"TRITON_INTERPRET": "1"} if self.name == "cpu" else {}

    def prepare_worker(self) -> list[str]:
        import torch  # noqa: F401
        import triton  # noqa: F401

        return []

    def synchronize(self) -> None:
        return None


def get_backend(name: str) -> Backend:
    if name not in ("cpu", "cuda", "npu"):
        raise ValueError(f"unknown device {name!r}: expected cpu, cuda or npu")
    return Backend(name=name, torch_device=name)
