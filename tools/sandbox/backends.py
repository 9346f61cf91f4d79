"""Device backends: what a worker sets up before it imports triton, and how it talks to the device.

The caller (agent, CLI) never imports triton: it picks a device with `select_device` from `probe_devices`,
starts workers with `Backend.worker_env()` and lets each worker call `Backend.prepare_worker()`.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

DEVICES = ("cpu", "cuda", "npu")

_PROBE = """
import json
import torch
npu = False
try:
    import torch_npu  # noqa: F401
    npu = bool(torch.npu.is_available())
except Exception:
    pass
print(json.dumps({"cuda": bool(torch.cuda.is_available()), "npu": npu}))
"""


@dataclass(frozen=True)
class Backend:
    name: str
    torch_device: str

    def worker_env(self) -> dict[str, str]:
        """Environment to set before triton is imported in a worker."""
        # An explicit "0" keeps an interpreter setting inherited from the parent out of GPU workers.
        if self.name == "cpu":
            return {"TRITON_INTERPRET": "1"}
        # Workers fork a child per job, and CUDA cannot be used in a child forked after the parent touched
        # it: the NVML-based check lets the worker see the device without creating a CUDA context.
        env = {"TRITON_INTERPRET": "0", "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
        if self.name == "cuda" and (folder := libcuda_dir()):
            env["TRITON_LIBCUDA_PATH"] = folder
        return env

    def prepare_worker(self) -> list[str]:
        """Import torch and triton in this (fresh worker) process, check the device; return notes."""
        import torch

        if self.name == "npu":
            try:
                import torch_npu  # noqa: F401
            except ImportError as exc:
                raise RuntimeError(f"device npu requested but torch_npu cannot be imported: {exc}") from exc
        import triton

        interpreting = bool(triton.knobs.runtime.interpret)
        if self.name == "cpu":
            if not interpreting:
                raise RuntimeError("cpu backend needs TRITON_INTERPRET=1 set before triton is imported")
            from kernel_medic.tools.sandbox import interpreter_shims

            interpreter_shims.install()
            # The workers share the cores with each other and with the agent: a job's intra-op threads only
            # spin against them (a 3 MB fill: 120 ms with 2 threads on a loaded 2-core machine, 20 with 1).
            torch.set_num_threads(1)
            from kernel_medic.tools.sandbox.warmup import warm_up

            failed = warm_up()  # the forked job children inherit what the interpreter's first launch loads
            interpreter_shims.drain_notes()
            interpreter_shims.drain_work()
            note = (
                f"cpu: triton {triton.__version__} CPU interpreter; programs run sequentially, "
                "num_warps/num_stages have no effect"
            )
            return [note, failed] if failed else [note]
        if interpreting:
            raise RuntimeError(f"{self.name} backend needs TRITON_INTERPRET unset or 0, found it enabled")
        if self.name == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("device cuda requested but no CUDA device is visible in the worker")
            versions = f"torch {torch.__version__}, triton {triton.__version__}"
            # No get_device_name here: it would initialise CUDA in the worker and break every forked child.
            return [f"cuda: {torch.cuda.device_count()} device(s); a CUDA context per job, {versions}"]
        if not torch.npu.is_available():
            raise RuntimeError("device npu requested but no NPU device is visible in the worker")
        versions = f"torch {torch.__version__}, triton {triton.__version__}"
        return [f"npu: {torch.npu.get_device_name(0)}, {versions}"]

    def synchronize(self) -> None:
        """Wait for queued device work (timings and results are only meaningful after this)."""
        if self.name == "cuda":
            import torch

            torch.cuda.synchronize()
        elif self.name == "npu":
            import torch

            torch.npu.synchronize()

    def move(self, obj: Any) -> Any:
        """Move tensors inside tensors/lists/tuples/dicts to this backend's device; other values are kept."""
        if self.name == "cpu":
            return obj
        return _move(obj, self.torch_device)


def _move(obj: Any, device: str) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, list):
        return [_move(v, device) for v in obj]
    if isinstance(obj, tuple):
        items = [_move(v, device) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return {k: _move(v, device) for k, v in obj.items()}
    return obj


@functools.cache
def libcuda_dir() -> str | None:
    """The folder of the CUDA driver library (libcuda.so.1), looked up outside the sandbox.

    Triton finds it by running `/sbin/ldconfig -p` at the first launch, and inside the sandbox that command
    exits 1 (seen on an H200 machine: every kernel launch raised CalledProcessError). A worker given
    TRITON_LIBCUDA_PATH never asks. Searched like Triton: the linker cache, then LD_LIBRARY_PATH, then the
    folders drivers are usually mounted at.
    """
    if os.environ.get("TRITON_LIBCUDA_PATH"):
        return os.environ["TRITON_LIBCUDA_PATH"]
    try:
        cache = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        cache = ""
    folders = [os.path.dirname(line.split()[-1]) for line in cache.splitlines() if "libcuda.so.1" in line]
    folders += [f for f in os.environ.get("LD_LIBRARY_PATH", "").split(":") if f]
    folders += ["/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib"]
    return next((f for f in folders if os.path.isfile(os.path.join(f, "libcuda.so.1"))), None)


def get_backend(name: str) -> Backend:
    if name not in DEVICES:
        raise ValueError(f"unknown device {name!r}: expected cpu, cuda or npu")
    return Backend(name=name, torch_device=name)


def select_device(requested: str | None, *, cuda_available: bool, npu_available: bool) -> str:
    """Resolve a requested device ("auto"/None prefers cuda, then npu, then cpu); refuse unavailable ones."""
    if requested is None or requested == "auto":
        return "cuda" if cuda_available else "npu" if npu_available else "cpu"
    if requested == "cuda" and not cuda_available:
        raise ValueError("device cuda requested but no CUDA device is visible")
    if requested == "npu" and not npu_available:
        raise ValueError("device npu requested but no NPU device is visible (is torch_npu installed?)")
    if requested not in DEVICES:
        raise ValueError(f"unknown device {requested!r}: expected auto, cpu, cuda or npu")
    return requested


def probe_devices(timeout_s: float = 120.0) -> dict[str, bool]:
    """Which accelerators torch sees, asked in a subprocess so that this process never initialises them."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout_s, env=env
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"device probe failed (exit {proc.returncode}): {tail[0]}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"cuda": bool(found["cuda"]), "npu": bool(found["npu"])}


def resolve_device(requested: str) -> str:
    """The device a run uses: `cpu` as is, else what the probe finds (ValueError when it is not there)."""
    if requested == "cpu":
        return "cpu"
    facts = probe_devices() if requested in ("auto", "cuda", "npu") else {"cuda": False, "npu": False}
    return select_device(requested, cuda_available=facts["cuda"], npu_available=facts["npu"])
