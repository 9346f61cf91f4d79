from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from kernel_medic.tools.sandbox.backends import Backend, get_backend, probe_devices, select_device


@pytest.mark.parametrize(
    ("requested", "cuda", "npu", "expected"),
    [
        (None, True, True, "cuda"),
        ("auto", True, False, "cuda"),
        ("auto", False, True, "npu"),
        (None, False, True, "npu"),
        ("auto", False, False, "cpu"),
        (None, False, False, "cpu"),
        ("cpu", True, True, "cpu"),
        ("cpu", False, False, "cpu"),
        ("cuda", True, False, "cuda"),
        ("npu", True, True, "npu"),
    ],
)
def test_select_device_resolves(requested: str | None, cuda: bool, npu: bool, expected: str) -> None:
    assert select_device(requested, cuda_available=cuda, npu_available=npu) == expected


@pytest.mark.parametrize(
    ("requested", "cuda", "npu", "message"),
    [
        ("cuda", False, True, "device cuda requested but no CUDA device is visible"),
        ("npu", True, False, "device npu requested but no NPU device is visible"),
        ("gpu", True, True, "unknown device 'gpu'"),
        ("", False, False, "unknown device ''"),
    ],
)
def test_select_device_refuses(requested: str, cuda: bool, npu: bool, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        select_device(requested, cuda_available=cuda, npu_available=npu)
    assert "\n" not in str(info.value)


def test_worker_env_turns_the_interpreter_on_only_for_cpu() -> None:
    assert get_backend("cpu").worker_env() == {"TRITON_INTERPRET": "1"}
    for device in ("cuda", "npu"):
        env = get_backend(device).worker_env()
        assert env["TRITON_INTERPRET"] == "0"
        # the worker must see the device without creating a context its forked children would inherit
        assert env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"


def test_get_backend() -> None:
    backend = get_backend("cuda")
    assert (backend.name, backend.torch_device) == ("cuda", "cuda")
    with pytest.raises(ValueError, match="unknown device 'tpu'") as info:
        get_backend("tpu")
    assert "\n" not in str(info.value)


def test_cpu_move_and_synchronize_keep_values() -> None:
    cpu = get_backend("cpu")
    payload = {"x": torch.ones(2), "rest": [torch.zeros(1), (3, "s")]}
    assert cpu.move(payload) is payload
    cpu.synchronize()


def test_move_to_a_device_walks_containers() -> None:
    # "meta" tensors stand in for the CUDA device this host lacks.
    cuda_on_meta = Backend(name="cuda", torch_device="meta")
    moved = cuda_on_meta.move({"a": [torch.ones(2), (torch.zeros(3), 7)], "b": "text"})
    assert moved["a"][0].device.type == "meta" and moved["a"][1][0].device.type == "meta"
    assert moved["a"][1][1] == 7 and moved["b"] == "text"
    assert isinstance(moved["a"][1], tuple)


def test_probe_devices_matches_torch() -> None:
    expected_npu = False if importlib.util.find_spec("torch_npu") is None else None
    found = probe_devices()
    assert set(found) == {"cuda", "npu"}
    assert all(isinstance(v, bool) for v in found.values())
    assert found["cuda"] == torch.cuda.is_available()
    if expected_npu is not None:
        assert found["npu"] is expected_npu


_PREPARE = textwrap.dedent(
    """
    import os, sys
    from kernel_medic.tools.sandbox.backends import get_backend
    backend = get_backend(sys.argv[1])
    os.environ.update(backend.worker_env())
    try:
        notes = backend.prepare_worker()
    except RuntimeError as exc:
        print("ERROR", exc)
    else:
        import triton
        print("NOTES", notes, "INTERPRET", triton.knobs.runtime.interpret)
    """
)


def _prepare_in_worker(devices: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    procs = {d: subprocess.Popen([sys.executable, "-c", _PREPARE, d], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env) for d in devices}
    out = {}
    for device, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
        out[device] = stdout.strip()
    return out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a host without CUDA")
def test_prepare_worker_in_a_fresh_process() -> None:
    out = _prepare_in_worker(["cpu", "cuda", "npu"])
    assert out["cpu"].startswith("NOTES") and "CPU interpreter" in out["cpu"] and out["cpu"].endswith("True")
    assert out["cuda"] == "ERROR device cuda requested but no CUDA device is visible in the worker"
    if importlib.util.find_spec("torch_npu") is None:
        assert out["npu"].startswith("ERROR device npu requested but torch_npu cannot be imported")
